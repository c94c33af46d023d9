"""Every hook pegboard calls, in one place.

A plugin implements only the hooks it needs, with only the arguments it needs
(pluggy passes an implementation the subset of arguments it names), so a spec
can gain arguments later without breaking anyone. Mark implementations with
``pegboard.hookimpl``.

Hooks come in three groups, following the design:

* registering tools: ``pegboard_config_model``, ``pegboard_register_tools``;
* loading tool descriptions: ``pegboard_tool_description``;
* deciding permissions: ``pegboard_permission``, ``pegboard_rule_matcher``
  (with ``pegboard_rule_samples`` for ``plugins check``),
  ``pegboard_tool_namespaces``, ``pegboard_protected_paths``, and the host
  callbacks ``pegboard_ask`` and ``pegboard_classify``;

plus the call pipeline (``pegboard_before_call``, ``pegboard_after_call``,
``pegboard_event``, ``pegboard_session_closed``), durable state
(``pegboard_store_schema``, ``pegboard_session_deleted``), the operator
surface (``pegboard_doctor``, ``pegboard_register_commands``), and
``pegboard_add_hooks``, through which a plugin declares hooks of its own
(pytest's ``pytest_addhooks``): the fs plugin's ``pegboard_file_read``, the
web plugin's ``pegboard_summarize``, the skills plugin's
``pegboard_skill_dirs`` live in those plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:

    import click
    from pydantic import BaseModel

    from .calls import CallInfo, PreCall
    from .decisions import Answer, Decision, PermissionRequest, Rule, RuleMatcher, RuleSamples, ToolNamespace, Vote
    from .checks import Check
    from .plugin_context import PluginContext, StoreSchema
    from .plugin_session import PluginSession
    from .tools import Tool, ToolResult

PROJECT = "pegboard"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --- declaring hooks ---------------------------------------------------------


@hookspec
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    """Declare hooks your plugin calls and others implement: ``add(namespace)``
    with a module or class of ``@pegboard.hookspec`` functions named
    ``pegboard_*``. Called for every enabled plugin before any plugin's hooks
    are registered, so implementations are checked against your
    specifications; call them with ``context.each``/``context.notify``
    (or ``context.hook.<name>(...)`` for a first-result hook). A name the
    core or another plugin already declares fails your plugin."""


# --- registering tools -------------------------------------------------------


@hookspec
def pegboard_config_model() -> type[BaseModel] | None:
    """Return the pydantic model for this plugin's ``[plugins.<name>]`` table.

    The core validates the table against it (unknown keys are errors) and
    hands the instance to the plugin's other hooks as ``config``. ``enabled``
    is the core's own key and never reaches the model.
    """


@hookspec
def pegboard_register_tools(
    register: Callable[[Tool], None], config: Any, context: PluginContext
) -> None:
    """Register this plugin's tools by calling ``register(Tool(...))``.

    Called only for enabled plugins, once per toolbox. Keep it light: give
    handlers and input models as ``"module:attr"`` strings so that listing
    tools imports nothing heavy.
    """


# --- loading descriptions -----------------------------------------------------


@hookspec(firstresult=True)
def pegboard_tool_description(tool: Tool, context: PluginContext) -> str | None:
    """Return the model-facing description of ``tool``, or None to pass.

    The first text returned is the tool's whole description: it replaces the
    plugin's ``descriptions/<Tool>.md`` (and ``Tool.description``), which is
    then not read, so there is no way to append to it here; to extend a
    text, read the file yourself and return the whole. The order: the
    operator's override folders first (``<config dir>/descriptions/<Tool>.md``,
    then the project's ``.pegboard/descriptions/``, in a trusted project
    only), then plugins' implementations, last the plugin's
    ``descriptions/<Tool>.md`` and then ``Tool.description``. Called for
    every tool, yours or not: check ``tool.plugin == context.name``. A hook
    that raises leaves that tool undescribed and out of the catalogue.
    """


# --- deciding permissions -----------------------------------------------------


@hookspec
def pegboard_permission(request: PermissionRequest, config: Any, context: PluginContext) -> Vote | None:
    """Vote on one tool call: ``Vote.allow/ask/deny(reason)``, or None to abstain.

    Every plugin is asked about every call; most answer only for their own
    tools (``request.tool.plugin == context.name``). ``config`` and
    ``context`` are the voting plugin's own. Deny beats ask beats allow, and
    a plugin that raises counts as a deny for that call.
    """


@hookspec(firstresult=True)
def pegboard_rule_matcher(rule: Rule, context: PluginContext, saved: Any) -> RuleMatcher | None:
    """Compile a permission rule's specifier for a tool this plugin owns.

    Return an object with ``matches(request) -> bool``, None when the rule
    is not for this plugin, or raise ``ValueError`` with a message when the
    specifier does not parse (the operator sees it with the file and rule).

    ``saved`` (take it only if your matcher has ``save()``: the rule cache
    protocol, ``RuleMatcher``): what your matcher's ``save()`` returned for
    this same rule in an earlier process, or None. Build the matcher from
    it instead of parsing the specifier again; anything the disk decided
    (a path's real name) check again. Raise ``ValueError`` when it does not
    fit, and the rule is compiled without it.
    """


@hookspec
def pegboard_rule_samples(context: PluginContext) -> RuleSamples | None:
    """Sample rules in your plugin's grammar, and sample calls to try them
    on, for ``pegboard plugins check`` (``pegboard.check_plugin``): return a
    ``RuleSamples``. Never called while pegboard runs tools; only the
    check asks it, so it may build its samples freely.
    """


@hookspec
def pegboard_tool_namespaces(config: Any, context: PluginContext) -> Iterable[ToolNamespace] | None:
    """Declare the namespaces this plugin names tools in: ``ToolNamespace``
    objects. A tool called ``<name>__<group>__<tool>`` then belongs to
    group ``<group>``, and rules naming ``<name>__<group>`` (or
    ``<name>__<group>__*``) cover every tool of the group (the mcp plugin's
    ``mcp__<server>__<tool>``). Called once per toolbox, after the plugin's
    tools are registered. A name another loaded plugin declared first is
    refused with a warning on this plugin."""


@hookspec
def pegboard_protected_paths(config: Any, context: PluginContext) -> Iterable[str] | None:
    """Paths this plugin adds to the protected paths (gitignore-style
    patterns, as ``[permissions] protected_paths`` takes them): files whose
    change would change what runs or what is allowed, such as the mcp
    plugin's ``.mcp.json``. The fs tools ask before writing them and the
    shell's sandbox keeps them read-only, as for the core's own list."""


@hookspec(firstresult=True)
def pegboard_ask(request: PermissionRequest, decision: Decision) -> Answer | None:
    """Host callback: ask the person about a call. Return an ``Answer``.

    With no implementation (headless), an ask becomes a deny that says how
    to allow the call.
    """


@hookspec(firstresult=True)
def pegboard_elicit(session: PluginSession, source: str, message: str,
                    schema: dict[str, Any]) -> dict[str, Any] | None:
    """Host callback: a tool needs the person to fill in a form. May be a coroutine.

    ``source`` says who asks (e.g. "MCP server 'github'"), ``message`` what
    for; ``schema`` is a flat JSON Schema object of the fields. Return
    ``{"action": "accept", "content": {...}}``, ``{"action": "decline"}`` or
    ``{"action": "cancel"}``. Fields left out of an accepted answer take the
    schema's defaults. With no implementation (headless), the form is declined.
    Call it through ``Session.elicit``, which asks one question at a time.
    """


@hookspec(firstresult=True)
def pegboard_classify(request: PermissionRequest, decision: Decision) -> Vote | None:
    """Host callback for ``auto`` mode: judge a call that would otherwise ask.

    It is consulted only for asks: nothing it says can turn a deny into an allow.
    """


# --- the call pipeline --------------------------------------------------------


@hookspec
def pegboard_before_call(call: CallInfo) -> PreCall | None:
    """Runs after the permission decision, before the tool.

    Return ``PreCall(input=...)`` to rewrite the input, ``PreCall(block=...)``
    to stop the call with a message for the model, ``PreCall(context=...)``
    to add text to the result, or None.
    """


@hookspec
def pegboard_after_call(call: CallInfo, result: ToolResult) -> ToolResult | None:
    """Runs after the tool. Return a replacement result, or None to keep it."""


@hookspec
def pegboard_event(session: PluginSession, kind: str, data: dict[str, Any]) -> None:
    """Host callback: background results, notifications from tools that stream,
    one-time notes. ``kind`` is e.g. ``"background.done"``, ``"monitor.line"``."""


@hookspec
def pegboard_session_closed(session: PluginSession, context: PluginContext) -> None:
    """The session ends: stop child processes, flush state. ``context`` is
    the implementing plugin's own: ``session.plugin_state(context.name)`` is
    its state in the session."""


# --- durable state -------------------------------------------------------------


@hookspec
def pegboard_store_schema(context: PluginContext) -> StoreSchema | None:
    """Declare this plugin's tables in the store: a ``StoreSchema`` with its
    own ``sqlalchemy.MetaData`` (table names start with ``<plugin>_``), its
    version and the upgrade steps from older versions. Called only when the
    store is used; import SQLAlchemy inside the hook, not at module level."""


@hookspec
def pegboard_session_deleted(session_id: str, context: PluginContext) -> None:
    """A session was deleted (``pegboard sessions delete``, or expiry):
    delete what this plugin kept for it beyond its tables' ``session_id``
    rows, which the core deletes right after this hook."""


# --- services a host or plugin provides to other plugins ---------------------


# --- operator surface ---------------------------------------------------------


@hookspec
def pegboard_doctor(config: Any, context: PluginContext) -> Iterable[Check] | None:
    """Health checks for ``pegboard doctor``: return ``Check`` objects (or None).

    Each is shown as ``<plugin>: <check.name>``: pegboard adds the plugin's
    name, so ``Check("git", ...)`` from plugin ``hello`` is the line
    ``hello: git``. A ``fail`` makes doctor exit 1; a hook that raises is the
    line ``<plugin>: health check`` as a ``fail``. Called only for enabled
    plugins that loaded.
    """


@hookspec
def pegboard_register_commands(cli: click.Group, context: PluginContext) -> None:
    """Add subcommands to the ``pegboard`` command line.

    ``context`` is the plugin's own (that of the listing toolbox the command
    line is built from): a command that needs its plugin's config, folders or
    state keeps ``context.name`` and asks the toolbox it runs with for that
    plugin (``current_state().toolbox().context_for(name)``) rather than
    spelling its own name, which is whatever its entry point is called.
    """

"""The toolbox: config, plugins, tools, descriptions and the permission
engine, loaded once; sessions are made from it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from .._builtin.tools import CorePlugin
from .._loading.config import ConfigError, Settings, format_key, load_settings
from .._api.decisions import GROUP_SEPARATOR, PermissionRequest
from .._loading.descriptions import DescriptionOverrides, PackageDescriptions, clip_summary
from .._util.errors import report_failure, short_error
from .permissions.engine import PermissionEngine
from .._api.plugin_context import PluginContext
from .._loading.plugins import PluginRecord, Plugins
from .._api.policy import POLICY_NAMES, Policy
from .session import Session
from .._api.levels import Access, narrowest_access
from .._api.tools import CORE_PLUGIN, LEVELS, Level, Loading, LazyReferenceError, Tool, check_reference, replace_tool
from .._util.nearest import nearest

if TYPE_CHECKING:
    from .._api.calls import PendingCall
    from .._api.catalogue import Catalogue
    from .._api.clients import Client
    from .._api.decisions import Answer

__all__ = ["ABSENT", "Toolbox", "ToolStatus", "absence"]

# The start of an absent tool's status (``Tool.absent``, or its ``offered_when``'s ``Absent``).
ABSENT = "absent: "


@dataclass(frozen=True, slots=True)
class ToolStatus:
    """A row of ``pegboard tools list``."""

    tool: Tool
    enabled: bool
    status: str
    permission: Level
    absent: str | None = None
    """Why the tool is absent (``Tool.absent``), or absent from a plain session (its ``offered_when``)."""

    def __post_init__(self) -> None:
        if self.absent is None and self.status.startswith(ABSENT):
            object.__setattr__(self, "absent", self.tool.absent)  # frozen: set once, here

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.tool.name,
            "plugin": self.tool.plugin,
            "loading": self.tool.loading,
            "read_only": self.tool.read_only,
            "permission": self.permission,
            "enabled": self.enabled,
            "status": self.status,
            "absent": self.absent,
        }


class Toolbox:
    """Everything loaded from config and plugins. Make sessions from it.

    >>> toolbox = Toolbox.load(cwd=".")            # doctest: +SKIP
    >>> session = toolbox.session(mode="default")  # doctest: +SKIP
    """

    def __init__(self, settings: Settings, plugins: Plugins):
        self.settings = settings
        """The merged configuration this toolbox was loaded with."""
        self.plugins = plugins
        """The plugin manager's side: records, contexts, the stores (for the core and hosts)."""
        self.hook = plugins.hooks.relay
        """pluggy's hook relay (``toolbox.hook.<name>``), as ``PluginContext.hook``."""
        self.hooks = plugins.hooks
        """The core's dispatch helper, which calls each implementation in its own try."""
        self._descriptions: dict[str, str] = {}
        self._levels: dict[tuple[str, str], Level] = {}
        # Tools whose input model, handler or description could not be made
        # ready, with why: each is left out alone, never the catalogue.
        self.broken: dict[str, str] = {}
        """Tools left out because their input model, handler or description could not be
        made ready, with why (``pegboard tools list`` shows them)."""
        # Tools judged sound (the object judged, whether its handler was imported, whether its schema was built).
        self._sound: dict[str, tuple[Tool, bool, bool]] = {}
        # Per tool and behavior: the rule names that cover its calls (rule_keys).
        self._rule_keys: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self.handler_parts = _HandlerParts(self)
        """Per plugin: its context and validated config, as each call's ``ToolContext``
        carries them (``toolbox.handler_parts[plugin]``, worked out on first use)."""
        self._index()
        self.unknown_listed: list[tuple[str, str]] = []
        """``[tools]`` entries naming no tool known here nor near one: (key, name), for doctor."""
        problems = self._tool_list_problems()
        if problems:
            raise ConfigError(problems)
        plugins.listeners.append(self._plugin_tools_changed)
        self.permissions = PermissionEngine(self)
        """The permission engine: the rules compiled once for this toolbox."""

    def _index(self) -> None:
        """Statuses and the offered tools, from what the plugins registered."""
        settings, plugins = self.settings, self.plugins
        tools_cfg = settings.core.tools
        registered = dict(plugins.tools)
        for name, tool in registered.items():
            record = plugins.records.get(tool.plugin)
            if record is not None and record.defer != "auto":
                loading: Loading = "deferred" if record.defer == "always" else "always"
                if tool.loading != loading:
                    registered[name] = replace_tool(tool, loading=loading)
        self.statuses: dict[str, ToolStatus] = {}
        blocked = set(tools_cfg.block)
        for name, tool in registered.items():
            needs = tool.metadata.get("requires")
            if name in blocked:
                why = f"blocked by [tools] block in {settings.source_of('tools', 'block')}"
            elif needs and needs in blocked:
                why = f"blocked by [tools] (it goes with {needs}, which is blocked)"
            elif tools_cfg.allow is not None and name not in tools_cfg.allow and tool.plugin != CORE_PLUGIN:
                why = f"blocked by [tools] allow in {settings.source_of('tools', 'allow')} (not listed)"
            elif tool.absent is not None:
                why = f"{ABSENT}{tool.absent}"
            else:
                why = ""
            self.statuses[name] = ToolStatus(tool, not why, why or "available", self.required_level(tool))
        for name, tool in plugins.inventory.items():
            self.statuses.setdefault(name, ToolStatus(
                tool, False, f"disabled by [plugins.{tool.plugin}] in "
                             f"{settings.source_of('plugins', tool.plugin, 'enabled')}", tool.permission))
        for name, why in self.broken.items():
            status = self.statuses.get(name)
            if status is not None and status.enabled:
                self.statuses[name] = ToolStatus(status.tool, False, f"broken: {why}", status.permission)
        # Plugins' own tools first, the groups of declared namespaces (MCP
        # servers' tools) after them, the core's last.
        ordered = sorted((s.tool for s in self.statuses.values() if s.enabled), key=self._listing_order)
        self.tools: dict[str, Tool] = {t.name: t for t in ordered}
        """The tools available here, by name (blocked, disabled and broken ones left out)."""

    def _tool_list_problems(self) -> list[str]:
        """``[tools]`` ``block``, ``allow`` and ``permission`` entries that
        name no tool here but come near one ("Notebookedit"): each is a
        mistake (a block that blocks nothing looks like protection), named
        with the tool meant. A name near none may be a tool of a plugin not
        installed here, or of a namespace whose tools come later (an MCP
        server's): kept in ``unknown_listed`` for doctor."""
        tools_cfg = self.settings.core.tools
        entries = [("block", name) for name in tools_cfg.block]
        entries += [("allow", name) for name in tools_cfg.allow or ()]
        entries += [("permission", name) for name in tools_cfg.permission]
        known = set(self.statuses)
        unknown = [(key, name) for key, name in entries
                   if name not in known and name.partition("__")[0] not in self.plugins.namespaces]
        if not unknown:
            return []

        known.update(self.plugins.reserved_names())  # the built-ins' own names, switched off or not
        problems = []
        for key, name in unknown:
            if name in known:
                continue
            meant = nearest(name, known)
            if meant is None:
                self.unknown_listed.append((key, name))
                continue
            case = " (tool names are case-sensitive)" if meant.casefold() == name.casefold() else ""
            problems.append(f"{self.settings.source_of('tools', key)}: {format_key(('tools', key))}: no tool is "
                            f"called {name!r}; did you mean {meant!r}?{case}")
        return problems

    # --- broken tools --------------------------------------------------------

    def tool_problem(self, tool: Tool, *, handler: bool = True, import_handler: bool = False,
                     schema: bool = True) -> str | None:
        """Why ``tool`` cannot work, or None. One rule for every kind of
        break: its input model (``"module:attr"``) does not resolve, its
        handler does not (read from the module's source without running a
        module not imported yet; ``import_handler``: imported, as a call
        does), or its description fails. ``schema``: the input schema built
        too, as the catalogue needs it (without, a model not imported yet is
        read from its module's source as a handler is: what a listing
        needs). Learned once; the tool is then broken alone: absent from the
        catalogue and ``serve``, shown ``broken:`` with the reason by
        listings, ``plugins check`` and doctor."""
        known = self.broken.get(tool.name)
        if known is not None:
            return known
        sound = self._sound.get(tool.name)
        if sound is not None and sound[0] is not tool:
            sound = None
        if sound is not None and (sound[1] or not import_handler) and (sound[2] or not schema):
            return None
        why = tool_break(tool, handler=handler, import_handler=import_handler, schema=schema)
        if why is not None:
            return self.mark_broken(tool, why)
        self.description(tool)
        known = self.broken.get(tool.name)
        if known is None and handler:
            self._sound[tool.name] = (tool, import_handler or (sound is not None and sound[1]),
                                      schema or (sound is not None and sound[2]))
        return known

    def mark_broken(self, tool: Tool, why: str) -> str:
        """Take ``tool`` out of what is offered, with why (for listings and doctor)."""
        self.broken[tool.name] = why
        record = self.plugins.records.get(tool.plugin)
        if record is not None:
            record.broken[tool.name] = why
        status = self.statuses.get(tool.name)
        if status is not None and status.enabled:
            self.statuses[tool.name] = ToolStatus(tool, False, f"broken: {why}", status.permission)
        self.tools.pop(tool.name, None)
        return why

    def check_tools(self, *, handlers: bool = False) -> dict[str, str]:
        """Judge every enabled tool as a listing does (``tool_problem``
        without building schemas or importing what is not imported yet;
        with ``handlers``, each handler imported, as doctor does), and
        return the broken ones with why."""
        for status in list(self.statuses.values()):
            if status.enabled:
                self.tool_problem(status.tool, import_handler=handlers, schema=handlers)
        return dict(self.broken)

    def _plugin_tools_changed(self, plugin: str) -> None:
        """A plugin registered its tools again (a server's tool list changed):
        re-index, and forget descriptions and levels that may be stale."""
        self._descriptions.clear()
        self._levels.clear()
        self._sound.clear()
        self._rule_keys.clear()
        self.handler_parts.clear()
        # the plugin's tools are new objects: each is judged again
        self.broken = {n: why for n, why in self.broken.items()
                       if (s := self.statuses.get(n)) is None or s.tool.plugin != plugin}
        record = self.plugins.records.get(plugin)
        if record is not None:
            record.broken.clear()
        self._index()
        self.permissions.tools_changed()

    @classmethod
    def load(
        cls,
        *,
        cwd: str | os.PathLike[str] | None = None,
        config: str | os.PathLike[str] | None = None,
        plugins: list[str] | None = None,
        host: object | None = None,
        inventory: bool = False,
        listing: bool = False,
        trust_project: bool | None = None,
        extra_plugins: Mapping[str, object] | None = None,
    ) -> Toolbox:
        """Read config, load plugins, register tools.

        ``cwd``: the project root and first working directory (default: the
        current directory). ``config``: an extra config file (like
        ``--config``). ``plugins``: load only these (like ``PEGBOARD_PLUGINS``).
        ``host``: an object implementing host hooks (``pegboard_ask``,
        ``pegboard_event``, ...). Raises ``ConfigError`` for config an
        operator must fix. ``inventory``: also collect the tool names of
        disabled plugins (for listings). ``listing``: the toolbox only lists
        tools, so plugins start nothing to learn theirs (``PluginContext.listing_only``).
        ``trust_project``: the host's own answer to whether the project's
        files may widen what pegboard may do (see docs/security.md); None
        (the default) takes the person's trusted folders (``pegboard
        trust``), and an untrusted project's files may only narrow.
        ``extra_plugins``: plugins that are not installed, by name: a
        module, an object with hook implementations, or an import string
        (``"pkg.mod"``, ``"pkg.mod:attr"``). They load alongside the
        installed ones whatever ``plugins`` says (``plugins=[]`` for instead
        of them), and take the place of an installed plugin of the same name.
        """
        root = Path(cwd) if cwd is not None else Path.cwd()
        if not root.is_dir():
            raise ConfigError([f"--cwd {root}: not a directory"])
        settings = load_settings(root, Path(config) if config is not None else None, trusted=trust_project)
        return cls._from_settings(settings, plugins=plugins, host=host, inventory=inventory, listing=listing,
                                 extra_plugins=extra_plugins)

    @classmethod
    def _from_settings(cls, settings: Settings, *, plugins: list[str] | None = None, host: object | None = None,
                      inventory: bool = False, listing: bool = False,
                      extra_plugins: Mapping[str, object] | None = None) -> Toolbox:
        """``load``'s second half: the plugins and tools for settings already
        read (``pegboard config set`` loads a changed file's this way before
        writing it)."""
        found = Plugins(settings, only=plugins, inventory=inventory, listing=listing, given=extra_plugins)

        def register_internal(pm: pluggy.PluginManager) -> None:
            pm.register(PackageDescriptions(), name="pegboard.descriptions")
            pm.register(DescriptionOverrides(settings), name="pegboard.overrides")

        found.load(register_internal, host=host, core={CORE_PLUGIN: CorePlugin()})
        return cls(settings, found)

    # --- lookups -----------------------------------------------------------

    @property
    def records(self) -> dict[str, PluginRecord]:
        """The plugins, by name, as listings show them: the core's own
        (``CORE_PLUGIN``, registered like them) is not among them."""
        return {name: r for name, r in self.plugins.records.items() if r.origin != "core"}

    def add_host(self, host: object, name: str = "host") -> None:
        """Register an object implementing host hooks (``pegboard_ask``, ``pegboard_event``...)
        after loading, as ``Toolbox.load(host=...)`` does."""
        self.plugins.register_host(host, name)

    def required_level(self, tool: Tool) -> Level:
        """The level a tool needs: its own, as ``[tools] permission`` overrides it.

        A project's config (which comes with the repository, not from the
        operator) may only raise a tool's requirement, never lower it.
        """
        cached = self._levels.get((tool.name, tool.permission))
        if cached is not None:
            return cached
        level = tool.permission
        for layer in self.settings.layers:
            table = layer.data.get("tools", {})
            value = table.get("permission", {}).get(tool.name) if isinstance(table, dict) else None
            if value not in LEVELS:
                continue
            if layer.from_checkout:
                level = max(level, value, key=LEVELS.index)
            else:
                level = value
        self._levels[(tool.name, tool.permission)] = level
        return level

    def all_tool_names(self) -> set[str]:
        """Every tool name known here, the blocked and (with ``inventory``) disabled ones too."""
        return set(self.statuses)

    def owner_of(self, name: str) -> str | None:
        """The plugin that registered tool ``name``, or None."""
        status = self.statuses.get(name)
        return status.tool.plugin if status else None

    def context_for(self, plugin: str) -> PluginContext | None:
        """Plugin ``plugin``'s ``PluginContext`` in this toolbox, or None for no such plugin."""
        record = self.plugins.records.get(plugin)
        return self.plugins.context(record) if record is not None else None

    def description(self, tool: Tool) -> str:
        """The tool's model-facing text, through the description hook."""
        text = self._descriptions.get(tool.name)
        if text is None:
            context = self.context_for(tool.plugin) or self.context_for(CORE_PLUGIN)
            try:
                text = self.hooks.first_direct("pegboard_tool_description", tool=tool, context=context) or ""
            except Exception as exc:  # a description loader's bug: this tool is not described, and not offered
                self.mark_broken(tool, f"its description failed: {short_error(exc)}")
                return ""
            self._descriptions[tool.name] = text
        return text

    def plugin_config(self, plugin: str) -> Any:
        """Plugin ``plugin``'s validated config (None without a config model or plugin)."""
        record = self.plugins.records.get(plugin)
        return record.config if record is not None else None

    def rule_keys(self, tool: Tool, behavior: str) -> tuple[str, ...]:
        """The rule names that cover a call of ``tool``: its own name; for a
        tool of a group a plugin declared (``mcp__server__tool``), the
        group's (``mcp__server``; for allow rules only when the declaring
        plugin owns the tool: ``mcp__srv__read`` is one tool, not a prefix of
        ``mcp__srv__read__delete_all``, since a group's name holds no
        ``__``); and the names its plugin
        declares in ``Tool.metadata["rule_names"]`` (Write is covered by Edit
        rules, Monitor by Bash rules). A declared name widens deny and ask
        rules from any plugin, but allow rules only when the plugin owns
        that name too: no plugin can put its tool under another's allow rules.
        """
        cache_key = (tool.name, tool.plugin, behavior)
        keys = self._rule_keys.get(cache_key)
        if keys is None:
            found = [tool.name]
            head, sep, _ = tool.name.partition(GROUP_SEPARATOR)
            namespaced = self.plugins.namespaces.get(head) if sep else None
            if namespaced is not None and (behavior != "allow" or namespaced[1] == tool.plugin):
                group = namespaced[0].group_of(tool.name)
                if group is not None:
                    found.append(namespaced[0].rule_name(group))
            declared = tool.metadata.get("rule_names", ()) if isinstance(tool.metadata, Mapping) else ()
            for alias in declared if isinstance(declared, (list, tuple)) else ():
                if isinstance(alias, str) and (behavior != "allow" or self.owner_of(alias) == tool.plugin):
                    found.append(alias)
            keys = self._rule_keys[cache_key] = tuple(dict.fromkeys(found))
        return keys

    # --- what a session is offered ---------------------------------------------

    def hides(self, session: Session, tool: Tool) -> bool:
        """Whether ``session`` is not offered ``tool`` whatever its policy
        says (a child session's narrowing, or the tool's own ``offered_when``)."""
        if tool.offered_when is not None and not self._offers_now(session, tool):
            return True
        if session.parent is None and not session.hidden_tools and session.only_tools is None:
            return False
        # Asked twice per call (the tool looked up, the decision); the
        # answer depends only on the tool and on these two sets.
        key = (tool.name, tool.plugin, session.hidden_tools, session.only_tools)
        found = session._hides.get(key)
        if found is None:
            found = session._hides[key] = self._narrowed_away(session, tool)
        return found

    def _offers_now(self, session: Session, tool: Tool) -> bool:
        try:
            return tool.offered_to(session)
        except Exception as exc:  # a plugin's bug hides its own tool, never the catalogue
            report_failure(f"offered_when of tool {tool.name!r}", exc)
            return False

    def access_to(self, session: Session, tool: Tool) -> Access:
        """What ``session`` may do with ``tool`` (``Session.access_to``): the
        narrowest of the tool's ``subagents`` and what each session from it up
        to the top was granted of it (``child(access=...)``); ``"full"`` for a
        top session or a tool every sub-agent gets."""
        ceiling = tool.subagents
        if session.parent is None or ceiling is True:
            return "full"
        if ceiling is False:
            return "none"
        held: list[Access] = [ceiling]
        current: Session | None = session
        while current is not None and current.parent is not None:
            held.append(current.granted_access.get(tool.name, "none"))
            current = current.parent
        return narrowest_access(*held)

    def _narrowed_away(self, session: Session, tool: Tool) -> bool:
        if session.parent is not None and self.access_to(session, tool) == "none":
            return True
        if session.only_tools is not None and tool.plugin != CORE_PLUGIN and tool.name not in session.only_tools:
            return True
        if not session.hidden_tools:
            return False
        if tool.metadata.get("requires") in session.hidden_tools:
            return True
        # what a deny rule of a hidden name would cover
        return any(name in session.hidden_tools for name in self.rule_keys(tool, "deny"))

    def offered_tools(self, policy: Policy, session: Session | None = None) -> list[Tool]:
        """The tools ``policy`` offers (and ``session`` does not hide), ToolSearch only when a
        deferred tool is among them."""
        # (a tool found broken has left self.tools; one not yet judged is
        # judged where its schema is needed: deferred tools import nothing)
        offered = [t for t in self.tools.values() if policy.offers_tool(self.required_level(t), t.read_only)]
        if session is not None:
            offered = [t for t in offered if not self.hides(session, t)]
        if not any(t.loading == "deferred" for t in offered if t.name != "ToolSearch"):
            offered = [t for t in offered if t.name != "ToolSearch"]
        return offered

    def offered_tool(self, name: str, session: Session) -> Tool | None:
        """Tool ``name`` if ``session`` is offered it now, else None
        (``why_unavailable`` says why); kept in the session when its policy
        offers it (``SessionState._offered_tool`` asks here on a miss)."""
        tool = self.tools.get(name)
        if tool is None or not session.policy.offers_tool(self.required_level(tool), tool.read_only):
            return None
        # A call imports the handler anyway: a break found now leaves the tool out from here on.
        if self.tool_problem(tool, import_handler=True) is not None:
            return None
        if self.hides(session, tool):
            return None
        if name == "ToolSearch":
            # (not kept: its answer depends on the other tools offered)
            if not any(t.loading == "deferred" for t in self.offered_tools(session.policy, session)):
                return None
            return tool
        session._offered[name] = (tool, session.policy)
        return tool

    def why_unavailable(self, name: str, session: Session) -> str:
        """Why tool ``name`` is not offered to ``session``, for the model (a near name suggested)."""
        status = self.statuses.get(name)
        if status is None:
            close = nearest(name, self.statuses)
            hint = f" Did you mean {close}?" if close else ""
            siblings = []
            if "__" in name:
                # A tool of a group (an MCP server's) that is not there now:
                # what the group does offer (the sign-in tools, say) says more
                # than the one nearest name.
                prefix = name.rsplit("__", 1)[0] + "__"
                siblings = sorted(n for n in self.tools if n.startswith(prefix))
            if siblings:
                more = f" and {len(siblings) - 8} more" if len(siblings) > 8 else ""
                hint = f" Offered under {prefix}: {', '.join(siblings[:8])}{more}."
            return f"There is no tool called {name!r}.{hint}"
        if status.tool.absent is not None and status.status.startswith(ABSENT):
            return f"{name} is not available here: {status.tool.absent}."
        if not status.enabled:
            return f"{name} is not available: {status.status}."
        if status.tool.offered_when is not None and not self._offers_now(session, status.tool):
            return f"{name} is not offered in this session: {absence(status.tool, session)}."
        if self.hides(session, status.tool):
            return f"{name} is not offered to this sub-agent ({' > '.join(session.chain)})."
        if (name == "ToolSearch" and status.tool.plugin == CORE_PLUGIN
                and session.policy.offers_tool(self.required_level(status.tool), status.tool.read_only)):
            return "ToolSearch is offered only while some tool is deferred; every tool's schema is already loaded."
        return (f"{name} is not offered in {session.policy.name} "
                f"(it needs {self.required_level(status.tool)}"
                f"{', and only read-only tools are offered' if session.policy.read_only_tools else ''}).")

    def catalogue(self, session: Session) -> Catalogue:
        """What ``session`` offers the model now (``Session.catalogue``)."""
        from .._api.catalogue import Catalogue, CatalogueTool, DeferredTool, augmented_schema

        background = self.settings.core.background.enabled
        tools, deferred = [], []
        for tool in self.offered_tools(session.policy, session):
            description = self.description(tool)
            if tool.name in self.broken:
                continue  # its description failed: left out alone (see tool_problem)
            if tool.loading == "deferred" and tool.name not in session.loaded:
                deferred.append(DeferredTool(tool.name, clip_summary(description), tool.plugin, tool.group,
                                             description, tool, background, session))
            elif self.tool_problem(tool) is None:  # a schema that cannot be built leaves that tool out alone
                tools.append(CatalogueTool(tool.name, description, augmented_schema(tool, background, session),
                                           tool.read_only, tool.loading == "deferred", tool.plugin, tool.native))
        return Catalogue(tools, deferred, self.settings.core.tools.deferred_budget)

    # --- sessions ----------------------------------------------------------

    def session(self, mode: str | None = None, *, session_id: str | None = None,
                parent_id: str | None = None, output_schema: Mapping[str, Any] | None = None,
                client: Client | None = None) -> Session:
        """A new session in ``mode`` (a mode or level name; default from config).

        ``output_schema``: the JSON Schema (an object's) of the final answer
        the host wants from the model. It is ``session.output_schema``; a
        plugin offers the model a tool to hand the answer in (the
        structured_output plugin's StructuredOutput, whose input schema it
        is), and the validated answer becomes ``session.structured_output``.
        ``ValueError`` when it is not a valid JSON Schema of an object.

        With ``session_id`` the session is durable: its record, scratchpad
        and what plugins store under its id are kept in the store, and the
        same id resumes them from any process (docs/store.md says what lasts).
        ``parent_id`` records the session that made this one (a sub-agent's).
        ``StoreError`` (or the driver's error) when the store cannot be reached.

        ``client``: who the session's calls are made for, when the host
        serves several (``session.client``, ``request.client``; kept in the
        audit log). Its ``[clients.<id>]`` table's mode is where the session
        starts (in place of ``mode``) and the widest it may switch to, as is
        the level the client's credential allows; its rules apply to this
        session's calls, with every config layer's.
        """
        # The permission engine applies disable_bypass_permissions and the
        # system policy's mode as a ceiling (Session.set_mode goes there too).
        checked = _answer_schema(output_schema) if output_schema is not None else None
        engine = self.permissions
        session = Session(self, engine.session_policy(engine.client_mode(client) or mode, client), session_id)
        if client is not None:
            session.client, session.requester = client, client.id
            for compiled in engine.client_rules(client.id):
                session._add_rule(compiled)
        session.output_schema = checked
        if session_id is not None:
            self.make_durable(session, session_id, parent_id)
        return session

    def delete_sessions(self, session_ids: list[str]) -> tuple[list[str], list[str]]:
        """Delete durable sessions and the sessions made from them, with all
        they keep (as ``pegboard sessions delete``): (deleted ids, problems)."""
        from .session_records import SessionRecords

        return SessionRecords(self).delete(session_ids)

    def pending_calls(self, session_id: str | None = None) -> list[PendingCall]:
        """Durable sessions' calls waiting for a person's answer (one
        session's, or every one's), from the store: any process sees them."""
        from .._services.pending import list_pending

        return list_pending(self, session_id)

    def answer_pending(self, pending_id: str, answer: Answer, *, shown_digest: str | None = None) -> PendingCall:
        """Record a person's answer to a durable session's pending call, from
        any process (a CLI, a web UI's server); that session's host runs it
        with ``session.pending.resolve(id)``. ``KeyError``: no such call waits;
        ``ValueError``: it was answered already (each call is answered once),
        the answer is ``Answer.later()``, or ``shown_digest`` (the
        ``PendingCall.current_digest()`` of the call the person was shown) is
        no longer the call's. The answer is kept with the digest of the call's
        tool and input; a call changed since is refused when resolved.
        ``answer.approver`` (who answered) is kept with it."""
        from .._services.pending import answer_pending

        return answer_pending(self, pending_id, answer, shown_digest=shown_digest)

    def make_durable(self, session: Session, session_id: str, parent_id: str | None) -> None:
        """Open (or resume) the store's record of ``session`` under ``session_id``."""
        from .session_records import DurableScratchpad, SessionRecords, check_session_id

        check_session_id(session_id)
        records = SessionRecords(self)
        session.resumed, entries = records.open(session_id, parent_id)
        session.scratchpad = DurableScratchpad(records, session_id, entries)
        session.durable, session.parent_id = True, parent_id

    def tool_statuses(self) -> list[ToolStatus]:
        """Every known tool with whether it is available and why not, as ``pegboard tools list`` shows."""
        return sorted(self.statuses.values(), key=lambda s: self._listing_order(s.tool))

    def permission_examples(self, tool: Tool, modes: Iterable[str] | None = None) -> dict[str, list[dict[str, str]]]:
        """For a tool with ``permission_examples``: per mode (``modes``, else
        every one), each example's label and the decision for it there
        (``decision``, ``reason``), as the permission engine reaches it (rules
        included; nobody asked). A mode this configuration forbids, or that
        does not offer the tool, is left out. The examples are the plugin's
        own inputs, decided as given: a listing does not build the tool's
        input model to validate them (a cold ``tools list`` imports none)."""
        if not tool.permission_examples:
            return {}

        out: dict[str, list[dict[str, str]]] = {}
        # One session through every mode: what a plugin learns for its votes
        # (the shell's look through the working directories) is learned once.
        session = self.session()
        for mode in POLICY_NAMES if modes is None else modes:
            try:
                session.set_mode(mode)
            except ConfigError:
                continue
            if not session.policy.offers_tool(self.required_level(tool), tool.read_only):
                continue
            rows = []
            for label, example in tool.permission_examples:
                request = PermissionRequest(tool=tool, input=dict(example), session=session, policy=session.policy)
                decision = self.permissions.evaluate(request)
                rows.append({"label": label, "decision": decision.decision, "reason": decision.reason})
            out[mode] = rows
        return out

    def listed_statuses(self, name: str | None = None) -> list[ToolStatus]:
        """``tool_statuses`` (or tool ``name``'s alone) as ``pegboard tools
        list`` shows them: a tool that keeps itself from some sessions
        (``offered_when``) and from a plain one (top-level, no host, no
        answer schema) says why there."""
        plain: Session | None = None
        out = []
        for status in self.tool_statuses() if name is None else [self.statuses[name]]:
            if status.enabled and status.tool.offered_when is not None:
                plain = plain or self.session()
                why = absence(status.tool, plain)
                if why is not None:
                    status = ToolStatus(status.tool, True, f"only in some sessions; a plain one lacks it: {why}",
                                        status.permission, why)
            out.append(status)
        return out

    def _listing_order(self, tool: Tool) -> tuple[bool, bool]:
        head, sep, _ = tool.name.partition("__")
        return bool(sep) and head in self.plugins.namespaces, tool.plugin == CORE_PLUGIN


class _HandlerParts(dict[str, tuple[PluginContext, Any]]):
    """A dict of each plugin's (context, config), filled on first use: a
    call's look-up is a dict's, with no call of a method of ours."""

    def __init__(self, toolbox: Toolbox) -> None:
        super().__init__()
        self._toolbox = toolbox

    def __missing__(self, plugin: str) -> tuple[PluginContext, Any]:
        context = self._toolbox.context_for(plugin)
        if context is None:  # (every registered tool's plugin has a record)
            raise LookupError(f"no plugin {plugin!r} is loaded")
        found = self[plugin] = (context, self._toolbox.plugin_config(plugin))
        return found


def _answer_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``output_schema`` checked: a valid JSON Schema describing an object (what tool inputs are)."""
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # only an answer schema pays for it

    if not isinstance(schema, Mapping):
        raise ValueError(f"output_schema must be a JSON Schema (a dict), not {type(schema).__name__}")
    checked = dict(schema)
    if checked.get("type") != "object":
        raise ValueError('output_schema must describe an object ("type": "object"): a tool\'s input is one')
    try:
        jsonschema.validators.validator_for(checked).check_schema(checked)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"output_schema is not a valid JSON Schema: {exc.message}") from None
    return checked


def absence(tool: Tool, session: Session) -> str | None:
    """Why ``tool`` keeps itself from ``session`` (``Tool.absence_in``), or
    None; a predicate that raises is its own bug, said as the reason."""
    try:
        return tool.absence_in(session)
    except Exception as exc:
        return f"its offered_when failed ({short_error(exc)})"


def tool_break(tool: Tool, *, handler: bool = True, import_handler: bool = False,
               schema: bool = True) -> str | None:
    """Why ``tool`` cannot work, as one line for its author, or None: its
    input model does not resolve (or is no pydantic model, or, with
    ``schema``, has no JSON Schema), or its handler does not
    (``check_reference``; ``import_handler``: imported). Without ``schema``
    a ``"module:attr"`` model is judged as a handler is, from its module's
    source when the module is not imported yet (``check_reference``)."""
    try:
        if schema:
            tool.schema
        elif isinstance(tool.input_model, str) and "model" not in tool.__dict__ \
                and check_reference(tool.input_model) is not None:
            tool.model  # its module is imported: whether it is a model costs nothing more
    except Exception as exc:
        model = tool.input_model if isinstance(tool.input_model, str) else "its input model"
        return f"input model {model!r} does not resolve: {describe_break(tool, exc)}"
    if handler and isinstance(tool.handler, str):
        try:
            if import_handler:
                tool.function
            else:
                check_reference(tool.handler)
        except Exception as exc:
            return f"handler {tool.handler!r} does not resolve: {describe_break(tool, exc)}"
    return None


def describe_break(tool: Tool, exc: BaseException) -> str:
    """The error of a lazy ``"module:attr"``, naming the plugin's module and
    line: the line that raised in the plugin's code, else the ``Tool(...)``
    that names the missing attribute."""
    refs = [r for r in (tool.handler, tool.input_model) if isinstance(r, str)]
    missing_module = isinstance(exc, ModuleNotFoundError) and any(
        r.partition(":")[0] == exc.name or r.startswith(f"{exc.name}.") for r in refs)
    if isinstance(exc, LazyReferenceError) or missing_module:
        where = f" (named at {tool.declared_at})" if tool.declared_at else ""
        kind = "AttributeError" if isinstance(exc, LazyReferenceError) else type(exc).__name__
        return f"{kind}: {exc}{where}"
    return short_error(exc)

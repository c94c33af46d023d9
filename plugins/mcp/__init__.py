"""The mcp plugin: MCP servers' tools inside pegboard, and pegboard as an MCP server.

This entry point stays light (stdlib, pydantic, pegboard): ``import mcp``
costs about half a second, so only the modules that run servers or clients
import it, and only when a call needs them. Tools are registered from the
on-disk cache of each server's tool list, so listing tools starts nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from pegboard import PermissionRequest, Rule, Tool, ToolNamespace, Vote, hookimpl

from ._config import (APPROVALS_FILE, McpConfig, ServerSpec, collect_servers, own_folder, read_mcp_json,
                      split_tool_name, tool_name)
from ._sdk import sdk_problem

if TYPE_CHECKING:
    from pegboard import StoreSchema  # the store's module is imported when the store is used

    from ._store import ToolCache

__all__ = ["RESOURCE_TOOLS", "get_prompt", "list_prompts"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("ListMcpResourcesTool", "ReadMcpResourceTool")

# A server that could not be listed is tried again by a later toolbox only
# after this long, so that a server that is down does not hold up every start.
RETRY_LISTING_AFTER_S = 60.0
# Set while a live session's server changed its tools: registration then
# reads the records only (it runs inside the session's event loop).
RELISTING: ContextVar[bool] = ContextVar("pegboard_mcp_relisting", default=False)

HANDLERS = "pegboard.plugins.mcp._handlers"
MODELS = "pegboard.plugins.mcp._models"
RESOURCE_TOOLS = {
    "ListMcpResourcesTool": ("list_resources", "ListResourcesInput"),
    "ReadMcpResourceTool": ("read_resource", "ReadResourceInput"),
    "ReadMcpResourceDirTool": ("read_resource_dir", "ReadResourceDirInput"),
}
# A server's tool name may hold characters pegboard's tool names (and rules) do not.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    from . import _hookspecs

    add(_hookspecs)


@hookimpl
def pegboard_config_model() -> type[McpConfig]:
    return McpConfig


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    """``pegboard serve``'s tables: API keys (hashed), replicas, calls waiting for approvers."""
    from ._serve_tables import store_schema

    return store_schema()


@hookimpl
def pegboard_tool_namespaces() -> list[ToolNamespace]:
    """A server's tools are ``mcp__<server>__<tool>``: rules naming
    ``mcp__<server>`` (or ``mcp__<server>__*``) cover every tool of it."""
    return [ToolNamespace("mcp", label="MCP server",
                          unknown_hint="is it approved and listed? `pegboard mcp list`")]


@hookimpl
def pegboard_protected_paths() -> list[str]:
    """A project's ``.mcp.json`` says which servers (programs) start: an
    agent must not be able to write it without asking."""
    return [".mcp.json"]


def _server_tools(spec: ServerSpec, cache: ToolCache, problems: list[str]) -> list[Tool]:
    listing = cache.load(spec)
    if listing is None:
        return []
    cfg = spec.config
    # Leave our own timeout room to fire first, with a message that names the server.
    budget = cfg.tool_timeout_s + cfg.startup_timeout_s + 5.0
    tools = []
    seen: dict[str, str] = {}
    for cached in listing.tools:
        if not cfg.offers(cached.name):
            continue
        name = tool_name(spec.name, _UNSAFE.sub("_", cached.name))
        if name in seen:
            # Two server names that differ only in characters we replace: a
            # duplicate would fail the whole plugin, so the second one is left out.
            problems.append(f"MCP server {spec.name!r}: tools {seen[name]!r} and {cached.name!r} both become "
                            f"{name}; {cached.name!r} is left out")
            continue
        seen[name] = cached.name
        tools.append(Tool(
            vote=_tool_vote,
            name=name,
            handler=f"{HANDLERS}:call_server_tool",
            input_schema=cached.input_schema or {"type": "object"},
            # A changed definition is the server's new words, not yet reviewed
            # by a person: the model gets them only once the change is approved.
            description=(f"Tool {cached.name} of MCP server {spec.name}. Its definition changed since the "
                         "user approved it; the new description is shown once they approve the change "
                         "(calling the tool asks them)." if cached.changed else
                         cached.description or f"Tool {cached.name} of MCP server {spec.name}."),
            # A server's annotations are its own claims: never trusted to make a tool read-only.
            read_only=False,
            loading="always" if cfg.defer == "never" or (cfg.defer == "auto" and cached.name in cfg.eager_load_tools)
            else "deferred",
            group=spec.name,
            title=cached.title,
            permission="unrestricted",
            timeout_s=budget,
            metadata={"server": spec.name, "tool": cached.name, "hash": cached.hash,
                      "approved_hash": cached.approved_hash},
        ))
    return tools


SIGN_IN_TOOLS = ("authenticate", "complete_authentication")


def _sign_in_tools(spec: ServerSpec) -> list[Tool]:
    """In place of a server's tools while it needs the person to sign in."""
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    return [
        Tool(vote=_tool_vote, name=tool_name(spec.name, "authenticate"), handler=f"{HANDLERS}:authenticate", input_schema=empty,
             description=(f"MCP server {spec.name} needs the user to sign in before its tools can be used. "
                          "Call this to start: it returns a link. Show the link to the user and ask them to open "
                          f"it and sign in, then call mcp__{spec.name}__complete_authentication."),
             loading="always", permission="read", group=spec.name, metadata={"server": spec.name, "sign_in": True}),
        Tool(vote=_tool_vote, name=tool_name(spec.name, "complete_authentication"), handler=f"{HANDLERS}:complete_authentication",
             input_schema=empty,
             description=(f"Finish signing in to MCP server {spec.name}, after the user opened the link that "
                          f"mcp__{spec.name}__authenticate gave and signed in. Waits for the sign-in to "
                          "complete; then the server's own tools take the place of these two."),
             loading="always", permission="read", group=spec.name, metadata={"server": spec.name, "sign_in": True}),
    ]


def _list_new_servers(specs: list[ServerSpec], cache: ToolCache, context: Any) -> None:
    """Servers whose tools were never recorded are listed now (all at once),
    except by a toolbox that only lists tools, which says they are missing."""
    import time

    unlisted = [s for s in specs if cache.load(s) is None]
    if not unlisted:
        return
    problem = context.report
    if getattr(context, "listing_only", False) or RELISTING.get():
        for spec in unlisted:
            failed = cache.last_failure(spec)
            why = f"; the last attempt failed: {failed[1]}" if failed else ""
            context.note(f"MCP server {spec.name!r}: tools not listed yet; the first session that needs them "
                         f"connects and lists them (or run `pegboard mcp refresh {spec.name}`){why}")
        return
    due = []
    for spec in unlisted:
        failed = cache.last_failure(spec)
        if cache.needs_sign_in(spec):
            # Nothing changes until the person signs in (which writes the token file).
            from ._tokens import TokenFile

            tokens = TokenFile(own_folder(context), spec).path
            context.watch(tokens)
            if failed is None or not tokens.exists() or tokens.stat().st_mtime < failed[0]:
                continue
        elif failed is not None and time.time() - failed[0] < RETRY_LISTING_AFTER_S:
            problem(f"MCP server {spec.name!r} ({spec.source}): its tools are not offered: {failed[1]} "
                    f"(tried again after {RETRY_LISTING_AFTER_S:g} s, or with `pegboard mcp refresh {spec.name}`)")
            continue
        due.append(spec)
    if not due:
        return
    from ._discovery import discover

    for spec in due:
        context.watch(cache.failure_path(spec))
    for name, (reason, sign_in) in discover(due, own_folder(context)).items():
        spec = next(s for s in due if s.name == name)
        if reason is not None:
            cache.record_failure(spec, reason, sign_in)
            if not sign_in:  # a server that needs sign-in is not a problem: its tools say so
                problem(f"MCP server {name!r} ({spec.source}): its tools are not offered: {reason}")


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: McpConfig, context: Any) -> None:
    specs, problems = collect_servers(config, context.root, context.settings, plugin=context.name)
    for problem in problems:
        context.report(problem)
    if config.read_mcp_json and not context.project_trusted and os.path.lexists(context.root / ".mcp.json"):
        # Named whatever it holds: a file with no server pegboard would start
        # (one it cannot parse, entries it does not take) was ignored too.
        found, _ = read_mcp_json(context.root / ".mcp.json")
        context.report_ignored(context.root / ".mcp.json",
                               f"MCP servers {', '.join(sorted(found))}" if found else "the whole file")
    # `tools list` caches its answer; these files decide ours, so a change to
    # any of them (a refreshed tool list, an approval) must invalidate it.
    watch = getattr(context, "watch", None)
    if watch is not None:
        watch(context.root / ".mcp.json")
        watch(own_folder(context) / APPROVALS_FILE)
    if not specs:
        return  # nothing else to offer, and the store's modules wait for a server
    from ._store import Approvals, ToolCache

    approvals = Approvals(own_folder(context))
    cache = ToolCache(own_folder(context))
    if watch is not None:
        for spec in specs:
            watch(cache.path(spec))
    runnable = [s for s in specs if s.config.enabled and approvals.is_approved(s)]
    if specs and (missing := sdk_problem()) is not None:
        # Nothing can reach a server without the SDK: say so once, offer none of their tools.
        context.report(f"MCP servers {', '.join(s.name for s in specs)} are configured, but {missing}")
        return
    _list_new_servers(runnable, cache, context)
    for spec in runnable:
        if cache.needs_sign_in(spec):
            for tool in _sign_in_tools(spec):
                register(tool)
            continue
        clashes: list[str] = []
        for tool in _server_tools(spec, cache, clashes):
            register(tool)
        for problem in clashes:
            context.report(problem)
    if specs:
        # Offered whenever a server is configured, even one that is down or
        # unapproved: the tools say why, which beats a silent absence.
        for name, (handler, model) in RESOURCE_TOOLS.items():
            register(Tool(vote=_tool_vote, name=name, handler=f"{HANDLERS}:{handler}", input_model=f"{MODELS}:{model}",
                          read_only=True, loading="deferred", permission="read", subagents=False))


def _pending_change(request: PermissionRequest) -> str | None:
    """The hash of a new definition the user has not approved, if any."""
    meta = request.tool.metadata
    pool = request.session.plugin_state(request.tool.plugin).get("pool")
    if pool is not None:
        live = pool.cached_tool(meta["server"], meta["tool"])
        if live is not None:
            return live.hash if live.changed else None
    return meta["hash"] if meta.get("hash") != meta.get("approved_hash") else None


def _tool_vote(request: PermissionRequest, context: Any) -> Vote | None:
    tool = request.tool
    if tool.name in RESOURCE_TOOLS:
        return Vote.allow("reading MCP resources changes nothing")
    if tool.metadata.get("sign_in"):
        return Vote.allow("signing in to an MCP server only starts what the user completes in their browser")
    server = tool.metadata.get("server", "?")
    changed = _pending_change(request)
    if changed is not None:
        # Remembered so the handler knows this call was approved for the new definition.
        request.session.plugin_state(context.name).setdefault("announced", {})[tool.name] = changed
        return Vote.ask(f"the definition of {tool.name} (MCP server {server}) changed since it was approved; "
                        "check the new description and schema", firm=True)
    return Vote.ask(f"{tool.name} is a tool of MCP server {server!r}, which can do anything its author made it do",
                    suggest=(tool.name, f"mcp__{server}"))


@hookimpl
def pegboard_rule_matcher(rule: Rule, context: Any) -> None:
    """MCP rules are bare names: ``mcp__<server>`` (every tool of the server,
    which the core matches by prefix) or ``mcp__<server>__<tool>``."""
    parts = split_tool_name(rule.tool)
    if parts is None or rule.specifier is None:
        return None
    raise ValueError(f"MCP rules take no specifier: write {rule.tool!r} for the whole "
                     f"{'tool' if parts[1] else 'server'}")


@hookimpl
async def pegboard_session_closed(session: Any, context: Any) -> None:
    pool = session.plugin_state(context.name).get("pool")
    if pool is not None:
        await pool.aclose()


@hookimpl
def pegboard_doctor(config: McpConfig, context: Any) -> list[Any]:
    """Per server: approved, tools known, command found. Starts nothing."""
    import shutil

    from pegboard import Check

    specs, problems = collect_servers(config, context.root, context.settings, plugin=context.name)
    checks = [Check("mcp config", "fail", line) for line in problems]
    missing = sdk_problem()
    if missing is not None:
        # Failing only where it matters: with servers configured (or for `pegboard serve`).
        checks.append(Check("mcp sdk", "fail" if specs else "warn",
                            f"{missing}; needed for MCP servers and `pegboard serve`"))
        return checks
    from ._store import Approvals, ToolCache

    approvals, cache = Approvals(own_folder(context)), ToolCache(own_folder(context))
    for spec in specs:
        name = f"mcp server {spec.name}"
        cfg = spec.config
        if not cfg.enabled:
            checks.append(Check(name, "ok", f"disabled in {spec.source}"))
            continue
        if not approvals.is_approved(spec):
            checks.append(Check(name, "warn", f"defined by the project ({spec.source}); not approved to run: "
                                              f"`pegboard mcp approve {spec.name}`"))
            continue
        if cfg.command is not None and "${" not in cfg.command and shutil.which(
                cfg.command, path=None) is None and not (context.root / cfg.command).exists():
            checks.append(Check(name, "fail", f"command {cfg.command!r} not found on PATH ({spec.source})"))
            continue
        listing = cache.load(spec)
        if listing is None:
            failed = cache.last_failure(spec)
            why = f"; the last attempt failed: {failed[1]}" if failed else ""
            checks.append(Check(name, "warn", "tool list not recorded yet: the first session that needs its "
                                              f"tools lists them (or `pegboard mcp refresh {spec.name}`){why}"))
            continue
        changed = [t.name for t in listing.tools if t.changed]
        if changed:
            checks.append(Check(name, "warn", f"changed since approved (calls ask first): {', '.join(changed)}"))
        else:
            checks.append(Check(name, "ok", f"{len(listing.tools)} tools ({cfg.transport})"))
    return checks


@hookimpl
def pegboard_register_commands(cli: Any, context: Any) -> None:
    from ._commands import add_commands

    add_commands(cli, context.name)


async def list_prompts(toolbox: Any, session: Any) -> dict[str, list[Any]]:
    """For an embedding host: each running-capable server's prompts (SDK
    ``Prompt`` objects), by server name; a server that fails is left out
    with its error under ``"!errors"``."""
    from ._handlers import host_pool
    from ._manager import describe_exception

    pool = host_pool(toolbox, session)
    out: dict[str, list[Any]] = {}
    errors: list[str] = []
    for name in sorted(pool.connections):
        try:
            out[name] = await pool.connection(name).list_prompts()
        except Exception as exc:
            errors.append(f"{name}: {describe_exception(exc)}")
    if errors:
        out["!errors"] = errors
    return out


async def get_prompt(toolbox: Any, session: Any, server: str, name: str, arguments: dict[str, str] | None = None) -> Any:
    """For an embedding host: one prompt of one server, rendered (an SDK ``GetPromptResult``)."""
    from ._handlers import host_pool

    return await host_pool(toolbox, session).connection(server).get_prompt(name, dict(arguments or {}))

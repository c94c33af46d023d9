"""The handlers of the mcp plugin's tools.

Kept importable without ``mcp``: the server machinery (``_pool``, which
imports the SDK) is imported on the first call that needs a server.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pegboard import TextContent, ToolContext, ToolResult

from ._config import collect_servers, own_folder
from ._content import resource_contents, to_tool_result
from ._models import ListResourcesInput, ReadResourceDirInput, ReadResourceInput

if TYPE_CHECKING:
    from ._pool import ServerPool

__all__ = ["authenticate", "call_server_tool", "complete_authentication", "list_resources", "pool_for",
           "read_resource", "read_resource_dir"]

SIGN_IN_WAIT_S = 180.0


def pool_for(ctx: ToolContext) -> ServerPool:
    """This session's servers, created on first use."""
    return _pool(ctx.session, ctx.state, ctx.plugin_context, ctx.config)


def _pool(session: Any, state: dict[str, Any], context: Any, config: Any) -> ServerPool:
    pool: ServerPool | None = state.get("pool")
    if pool is None:
        from ._manager import ClientSide
        from ._pool import ServerPool

        specs, _ = collect_servers(config, context.root, context.settings, plugin=context.name)
        pool = ServerPool(specs, data_dir=own_folder(context), log_dir=session.data_dir / context.name,
                          emit=session.emit, targets=state.get("targets"),
                          on_tools_changed=context.tools_changed,
                          client_side=ClientSide(elicit=session.elicit, roots=lambda: session.working_dirs,
                                                 emit=session.emit, log_level=config.log_level,
                                                 sample=_host_sampler(context, session)))
        state["pool"] = pool
    return pool


def _host_sampler(context: Any, session: Any) -> Callable[[str, dict[str, Any]], Awaitable[Any]] | None:
    """The implementations of ``pegboard_mcp_sample`` (the host's first), as
    one callable; None when nothing implements it, so sampling is not declared."""
    caller = getattr(context.hook, "pegboard_mcp_sample", None)
    implementations = list(reversed(caller.get_hookimpls())) if caller is not None else []
    if not implementations:
        return None

    async def sample(server: str, request: dict[str, Any]) -> Any:
        given = {"session": session, "server": server, "params": request}
        for impl in implementations:
            answer = impl.function(*[given[name] for name in impl.argnames])
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is not None:
                return answer
        return None

    return sample


async def call_server_tool(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    from ._manager import ServerUnavailable, ToolCallTimeout

    from ._manager import NeedsSignIn

    server, tool = ctx.tool.metadata["server"], ctx.tool.metadata["tool"]
    pool = pool_for(ctx)
    try:
        conn = pool.connection(server)
        await conn.ensure_started()
    except NeedsSignIn as exc:
        return _needs_sign_in(ctx, pool, exc)
    except ServerUnavailable as exc:
        return ToolResult.error(f"{ctx.tool.name} is unavailable: {exc}\nOther tools keep working.")
    live = pool.cached_tool(server, tool)
    if live is None or tool not in conn.tools:
        offered = ", ".join(sorted(conn.tools)) or "none"
        return ToolResult.error(f"MCP server {server!r} no longer offers a tool called {tool!r} "
                                f"(it offers: {offered}).")
    if live.changed:
        announced = ctx.state.setdefault("announced", {})
        if announced.get(ctx.tool.name) != live.hash:
            # The permission vote saw the old definition: this call was not
            # approved for what the tool is now. Record the change; the next
            # call asks about the new definition.
            ctx.emit("mcp.tool_changed", {"server": server, "tool": tool, "hash": live.hash})
            # The new description and schema are the server's words, unreviewed:
            # a person sees them before the model does (`pegboard tools show`).
            return ToolResult.error(
                f"{ctx.tool.name} was not run: its definition changed since it was approved, and a person "
                "must review the new definition first. Calling the tool again asks the user to approve the "
                "change (`pegboard mcp list` shows them the new description).")
        pool.approve_tool(server, live)
    async def progress(done: float, total: float | None, message: str | None) -> None:
        shown = message if message else (f"{done:g}/{total:g}" if total else f"{done:g}")
        ctx.output(shown, "progress", server=server, progress=done, total=total, message=message)

    try:
        result = await conn.call_tool(tool, args, progress=progress)
    except NeedsSignIn as exc:
        return _needs_sign_in(ctx, pool, exc)
    except ToolCallTimeout as exc:
        return ToolResult.error(f"{exc}. The call may still be running on the server; "
                                "check its effects before trying again.")
    except ServerUnavailable as exc:
        return ToolResult.error(f"{ctx.tool.name} failed: {exc}\nThe outcome of this call is unknown. "
                                "The server is restarted on the next call.")
    except Exception as exc:  # the server's protocol error: report it, keep the session
        from ._manager import describe_exception

        return ToolResult.error(f"{ctx.tool.name} failed: {describe_exception(exc)}")
    return to_tool_result(result)


async def list_resources(args: ListResourcesInput, ctx: ToolContext) -> ToolResult:
    from ._manager import ServerUnavailable, describe_exception

    pool = pool_for(ctx)
    names = [args.server] if args.server else sorted(pool.specs)
    if not names:
        return ToolResult.text("No MCP servers are configured.")
    sections: list[str] = []
    any_error = False
    for name in names:
        try:
            resources = await pool.connection(name).list_resources()
        except ServerUnavailable as exc:
            sections.append(f"## {name}\n(unavailable: {exc})")
            any_error = True
            continue
        except Exception as exc:
            sections.append(f"## {name}\n(listing failed: {describe_exception(exc)})")
            any_error = True
            continue
        try:
            templates = await pool.connection(name).list_resource_templates()
        except Exception:
            templates = []  # templates are extra: a server that fails them still lists its resources
        if not resources and not templates:
            sections.append(f"## {name}\n(no resources)")
            continue
        lines = [f"## {name}"]
        for r in resources:
            extra = ", ".join(x for x in (r.mime_type, r.description) if x)
            lines.append(f"- {r.uri}  {r.name}" + (f" ({extra})" if extra else ""))
        if templates:
            lines.append("Templates (fill in the {placeholders}, then read the URI):")
        for t in templates:
            extra = ", ".join(x for x in (t.mime_type, t.description) if x)
            lines.append(f"- {t.uri_template}  {t.name}" + (f" ({extra})" if extra else ""))
        sections.append("\n".join(lines))
    return ToolResult.text("\n\n".join(sections), is_error=any_error and len(names) == 1)


async def read_resource(args: ReadResourceInput, ctx: ToolContext) -> ToolResult:
    from ._manager import ServerUnavailable, describe_exception

    pool = pool_for(ctx)
    try:
        result = await pool.connection(args.server).read_resource(args.uri)
    except ServerUnavailable as exc:
        return ToolResult.error(str(exc))
    except Exception as exc:
        return ToolResult.error(f"Reading {args.uri} from {args.server!r} failed: {describe_exception(exc)}. "
                                "ListMcpResourcesTool shows the URIs a server offers.")
    content = resource_contents(result.contents)
    if not content:
        return ToolResult.text(f"{args.uri} is empty.")
    return ToolResult(content=content)


async def read_resource_dir(args: ReadResourceDirInput, ctx: ToolContext) -> ToolResult:
    """One level of a directory: the resources directly under the URI, and the
    sub-directories that lead to deeper ones (each shown once)."""
    from ._manager import ServerUnavailable, describe_exception

    pool = pool_for(ctx)
    try:
        resources = await pool.connection(args.server).list_resources()
    except ServerUnavailable as exc:
        return ToolResult.error(str(exc))
    except Exception as exc:
        return ToolResult.error(f"Listing {args.server!r} failed: {describe_exception(exc)}")
    base = args.uri if args.uri.endswith("/") else args.uri + "/"
    files: list[str] = []
    dirs: dict[str, int] = {}
    for r in resources:
        uri = str(r.uri)
        if not uri.startswith(base) or uri == base:
            continue
        rest = uri[len(base):]
        head, sep, _ = rest.partition("/")
        if sep:
            dirs[head] = dirs.get(head, 0) + 1
        else:
            extra = ", ".join(x for x in (r.mime_type, r.description) if x)
            files.append(f"- {uri}  {r.name}" + (f" ({extra})" if extra else ""))
    if not files and not dirs:
        return ToolResult.error(f"Nothing on {args.server!r} lies under {base}. "
                                "ListMcpResourcesTool shows every URI the server offers.")
    lines = [f"{base} on {args.server}:"]
    lines += [f"- {base}{d}/  (directory, {n} resource{'s' if n != 1 else ''} below)" for d, n in sorted(dirs.items())]
    lines += sorted(files)
    return ToolResult(content=[TextContent(text="\n".join(lines))])


def _needs_sign_in(ctx: ToolContext, pool: ServerPool, exc: Exception) -> ToolResult:
    """Record that the server wants a sign-in and swap its tools for the sign-in tools."""
    server = ctx.tool.metadata["server"]
    pool.cache.record_failure(pool.specs[server], str(exc), sign_in=True, scope=getattr(exc, "scope", None))
    ctx.plugin_context.tools_changed()
    return ToolResult.error(f"{ctx.tool.name} was not run: {exc}. Its tools come back once the user has signed in.")


async def authenticate(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    from ._signin import SignIn

    server = ctx.tool.metadata["server"]
    pool = pool_for(ctx)
    spec = pool.specs.get(server)
    if spec is None:
        return ToolResult.error(f"no MCP server is called {server!r}")
    signins = ctx.state.setdefault("signins", {})
    if (old := signins.pop(server, None)) is not None:
        await old.close()
    signin = SignIn(spec, own_folder(ctx.plugin_context), scope=pool.cache.sign_in_scope(spec))
    try:
        url = await signin.start()
    except Exception as exc:
        await signin.close()
        from ._manager import describe_exception

        return ToolResult.error(f"Signing in to MCP server {server!r} failed: {describe_exception(exc)}")
    if url is None:
        await signin.close()
        return await _signed_in(ctx, pool, server, None)
    signins[server] = signin
    ctx.emit("mcp.sign_in", {"server": server, "url": url})
    return ToolResult.text(
        f"Ask the user to open this link and sign in to MCP server {server!r}:\n{url}\n"
        f"When they say they are done, call mcp__{server}__complete_authentication.")


async def complete_authentication(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    server = ctx.tool.metadata["server"]
    signin = ctx.state.get("signins", {}).get(server)
    if signin is None:
        return ToolResult.error(f"No sign-in to {server!r} is under way: call mcp__{server}__authenticate first.")
    try:
        tools = await signin.finish(SIGN_IN_WAIT_S)
    except TimeoutError:
        return ToolResult.error(f"The user has not finished signing in to {server!r} yet (waited "
                                f"{SIGN_IN_WAIT_S:g} s). Ask them to open the link; then call this again.")
    except Exception as exc:
        ctx.state["signins"].pop(server, None)
        from ._manager import describe_exception

        return ToolResult.error(f"Signing in to MCP server {server!r} failed: {describe_exception(exc)}. "
                                f"Call mcp__{server}__authenticate to try again.")
    ctx.state["signins"].pop(server, None)
    return await _signed_in(ctx, pool_for(ctx), server, tools)


async def _signed_in(ctx: ToolContext, pool: ServerPool, server: str, tools: list[str] | None) -> ToolResult:
    # The session's own connection reconnects with the new tokens on its next call.
    conn = pool.connections.get(server)
    if conn is not None:
        await conn.stop()
    ctx.plugin_context.tools_changed()
    listing = pool.cache.load(pool.specs[server])
    names = [f"mcp__{server}__{t.name}" for t in listing.tools] if listing else []
    return ToolResult.text(f"Signed in to MCP server {server!r}. Its tools are now available: "
                           f"{', '.join(names) or '(none)'}.")


def loaded_context(toolbox: Any, plugin: str | None = None) -> Any:
    """This plugin's ``PluginContext`` in ``toolbox``: under ``plugin`` (the
    name ``pegboard_register_commands`` was given), or, for code a host calls
    with only a toolbox, under the name it was loaded from this package as.
    Raises when it is not loaded there (not installed, disabled or failed)."""
    if plugin is None:
        plugin = next((name for name, record in toolbox.records.items() if record.module == __package__), None)
    context = toolbox.context_for(plugin) if plugin is not None else None
    if context is None or toolbox.plugin_config(plugin) is None:
        raise RuntimeError("the mcp plugin is not loaded (is it disabled?)")
    return context


def host_pool(toolbox: Any, session: Any) -> ServerPool:
    """The session's servers, for a host calling ``list_prompts`` / ``get_prompt``."""
    context = loaded_context(toolbox)
    return _pool(session, session.plugin_state(context.name), context, toolbox.plugin_config(context.name))

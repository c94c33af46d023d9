"""``pegboard mcp list|approve|refresh`` and ``pegboard serve``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

__all__ = ["add_commands"]


def _state() -> Any:
    from pegboard.cli import current_state

    return current_state()


def _toolbox(listing: bool = True) -> Any:
    """The toolbox for the options as finally parsed (``--cwd`` may follow the command name).

    ``listing``: for commands that only show or record things, so that loading
    it does not connect to servers whose tools are not listed yet."""
    return _state().toolbox(listing=listing)


def _context(toolbox: Any, plugin: str) -> Any:
    """The plugin's context in the toolbox the command runs with (``plugin``:
    the name ``pegboard_register_commands`` was given)."""
    from ._handlers import loaded_context

    try:
        return loaded_context(toolbox, plugin)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None


def _specs(toolbox: Any, plugin: str) -> list[Any]:
    from ._config import collect_servers

    context = _context(toolbox, plugin)
    config = toolbox.plugin_config(plugin)
    specs, problems = collect_servers(config, context.root, context.settings, plugin=context.name)
    for line in problems:
        click.echo(f"pegboard: {line}", err=True)
    return specs


def server_rows(toolbox: Any, plugin: str) -> list[dict[str, Any]]:
    from ._config import own_folder
    from ._store import Approvals, ToolCache

    folder = own_folder(_context(toolbox, plugin))
    approvals, cache = Approvals(folder), ToolCache(folder)
    rows = []
    for spec in _specs(toolbox, plugin):
        listing = cache.load(spec)
        if not spec.config.enabled:
            state = "disabled"
        elif not approvals.is_approved(spec):
            state = "needs approval"
        elif cache.needs_sign_in(spec):
            state = f"needs sign-in (`pegboard mcp login {spec.name}`)"
        elif listing is None:
            state = "approved, tools not listed yet (the first session that needs them lists them)"
        else:
            state = "ready"
        changed = [t for t in listing.tools if t.changed] if listing else []
        rows.append({
            "name": spec.name,
            "source": spec.source,
            "transport": spec.config.transport,
            "target": spec.config.url or " ".join([spec.config.command or "", *spec.config.args]),
            "state": state,
            "tools": [t.name for t in listing.tools] if listing else None,
            "changed_tools": [t.name for t in changed],
            # For the person to review before approving (the model is not shown it).
            "changed_descriptions": {t.name: t.description for t in changed},
            "project_defined": spec.project_defined,
        })
    return rows


async def _refresh(toolbox: Any, plugin: str, names: list[str]) -> dict[str, tuple[bool, str]]:
    """Start the named servers once, to record their tool lists."""
    from pegboard.cli import progress

    from ._config import own_folder
    from ._pool import ServerPool

    folder = own_folder(_context(toolbox, plugin))
    specs = [s for s in _specs(toolbox, plugin) if s.name in names]
    pool = ServerPool(specs, data_dir=folder)
    out: dict[str, tuple[bool, str]] = {}
    what = f"Listing the tools of {len(names)} MCP server{'' if len(names) == 1 else 's'}"
    try:
        with progress(what) as shown:
            async def one(name: str) -> None:
                why = pool.why_unavailable(name)
                if why:
                    out[name] = (False, why)
                    return
                try:
                    conn = pool.connection(name)
                    await conn.ensure_started()
                    out[name] = (True, f"{len(conn.tools)} tools")
                except Exception as exc:
                    out[name] = (False, f"failed: {exc}")
                shown.update(f"{what} ({len(out)} done)")

            await asyncio.gather(*(one(n) for n in names))
    finally:
        await pool.aclose()
    return out


async def _login(toolbox: Any, plugin: str, name: str, browser: bool, timeout_s: float) -> int:
    from ._manager import describe_exception
    from ._signin import SignIn

    spec = {s.name: s for s in _specs(toolbox, plugin)}.get(name)
    if spec is None or spec.config.transport != "http":
        click.echo(f"pegboard: no url server is called {name!r}; `pegboard mcp list` shows them", err=True)
        return 2

    async def show(url: str) -> None:
        # The link is printed either way: a browser may not open on this machine.
        click.echo(f"Open this link to sign in to {name}:\n{url}", err=True)
        if browser:
            import webbrowser

            await asyncio.to_thread(webbrowser.open, url)

    from ._config import own_folder
    from ._store import ToolCache

    data_dir = own_folder(_context(toolbox, plugin))
    signin = SignIn(spec, data_dir, open_url=show, scope=ToolCache(data_dir).sign_in_scope(spec))
    from pegboard.cli import progress

    try:
        with progress(f"Asking {name} how to sign in"):
            url = await signin.start()
        if url is not None:
            click.echo(f"Waiting for the sign-in (up to {timeout_s:g} s)...", err=True)
        with progress(f"Waiting for the sign-in to {name}" if url is not None else f"Signing in to {name}"):
            tools = await signin.finish(timeout_s)
    except TimeoutError:
        click.echo(f"pegboard: the sign-in to {name} did not complete within {timeout_s:g} s", err=True)
        return 1
    except Exception as exc:
        click.echo(f"pegboard: signing in to {name} failed: {describe_exception(exc)}", err=True)
        return 1
    finally:
        await signin.close()
    click.echo(f"signed in to {name}; {len(tools)} tools")
    return 0


async def _prompts(toolbox: Any, server: str | None, prompt: str | None, arguments: dict[str, str],
                   as_json: bool) -> int:
    from . import get_prompt, list_prompts
    from ._manager import describe_exception

    async with toolbox.session() as session:
        try:
            if prompt is not None and server is not None:
                got = await get_prompt(toolbox, session, server, prompt, arguments)
                if as_json:
                    click.echo(got.model_dump_json(by_alias=True, exclude_none=True, indent=2))
                    return 0
                for message in got.messages:
                    text = getattr(message.content, "text", None) or f"[{message.content.type}]"
                    click.echo(f"{message.role}: {text}")
                return 0
            found = await list_prompts(toolbox, session)
        except Exception as exc:
            click.echo(f"pegboard: {describe_exception(exc)}", err=True)
            return 1
    errors = found.pop("!errors", [])
    if server is not None:
        found = {k: v for k, v in found.items() if k == server}
    if as_json:
        click.echo(json.dumps({k: [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in v]
                               for k, v in found.items()} | ({"errors": errors} if errors else {}), indent=2))
    else:
        for name, prompts in found.items():
            for p in prompts:
                args = " ".join(f"{a.name}{'' if a.required else '?'}" for a in (p.arguments or []))
                click.echo(f"{name:<16} {p.name:<24} {args:<24} {p.description or ''}")
        for line in errors:
            click.echo(f"pegboard: {line}", err=True)
    return 1 if errors else 0


def add_commands(cli: click.Group, plugin: str) -> None:
    """``plugin``: the name the plugin is installed under (its context's)."""
    from pegboard.cli import JSON, MODE, global_options

    @cli.group("mcp")
    def mcp_group() -> None:
        """MCP servers: where they come from, whether they may run."""

    @mcp_group.command("list")
    @global_options
    @JSON
    def mcp_list(as_json: bool) -> None:
        """Each server, its source and state.

        Exit status: 0 the servers listed; 2 a usage or configuration error."""
        rows = server_rows(_toolbox(), plugin)
        if as_json:
            click.echo(json.dumps(rows, indent=2))
            return
        if not rows:
            click.echo("No MCP servers are configured ([plugins.mcp.servers.<name>] or the project's .mcp.json).")
        for r in rows:
            tools = "-" if r["tools"] is None else str(len(r["tools"]))
            click.echo(f"{r['name']:<20} {r['state']:<16} tools: {tools:<4} {r['transport']:<5} {r['target']}")
            click.echo(f"{'':<20} from {r['source']}")
            if r["changed_tools"]:
                click.echo(f"{'':<20} changed since approved: {', '.join(r['changed_tools'])}")
                for name, text in r["changed_descriptions"].items():
                    click.echo(f"{'':<22}{name}: {text or '(no description)'}")

    @mcp_group.command("approve")
    @global_options
    @click.argument("names", nargs=-1, required=True)
    @click.option("--no-refresh", is_flag=True, help="Do not start the server to list its tools.")
    def mcp_approve(names: tuple[str, ...], no_refresh: bool) -> None:
        """Allow project-defined servers to run (for this project and this definition).

        Exit status: 0 approved (a server that failed to list its tools is said, and stays
        approved); 1 no server has one of the names; 2 a usage or configuration error."""
        from ._store import Approvals

        toolbox = _toolbox()
        from ._config import own_folder

        specs = {s.name: s for s in _specs(toolbox, plugin)}
        approvals = Approvals(own_folder(_context(toolbox, plugin)))
        for name in names:
            spec = specs.get(name)
            if spec is None:
                raise click.ClickException(f"no MCP server is called {name!r}; `pegboard mcp list` shows them")
            approvals.approve(spec)
            what = spec.config.url or " ".join([spec.config.command or "", *spec.config.args])
            click.echo(f"approved {name} ({what}) for {spec.root}")
        if not no_refresh:
            for name, (_, outcome) in asyncio.run(_refresh(toolbox, plugin, list(names))).items():
                click.echo(f"{name}: {outcome}")

    @mcp_group.command("refresh")
    @global_options
    @click.argument("names", nargs=-1)
    def mcp_refresh(names: tuple[str, ...]) -> None:
        """Start servers once to record their tool lists (all when none named).

        Exit status: 0 every server listed its tools; 1 one failed (each server's line says how it
        went); 2 a usage or configuration error."""
        toolbox = _toolbox()
        chosen = list(names) or [s.name for s in _specs(toolbox, plugin)]
        failed = False
        for name, (ok, outcome) in asyncio.run(_refresh(toolbox, plugin, chosen)).items():
            click.echo(f"{name}: {outcome}")
            failed = failed or not ok
        if failed:
            raise SystemExit(1)

    @mcp_group.command("login")
    @global_options
    @click.argument("name")
    @click.option("--no-browser", is_flag=True, help="Print the sign-in link instead of opening a browser.")
    @click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True,
                  help="Seconds to wait for the sign-in to complete.")
    def mcp_login(name: str, no_browser: bool, timeout_s: float) -> None:
        """Sign in to a url server (OAuth): a browser, or a printed link, and a loopback redirect.

        Exit status: 0 signed in; 1 the sign-in failed or did not complete in time; 2 no url server
        has that name, or a usage or configuration error."""
        code = asyncio.run(_login(_toolbox(), plugin, name, not no_browser, timeout_s))
        if code:
            raise SystemExit(code)

    @mcp_group.command("prompts")
    @global_options
    @click.argument("server", required=False)
    @click.argument("prompt", required=False)
    @click.option("--arg", "-a", "pairs", multiple=True, metavar="KEY=VALUE", help="A prompt argument.")
    @JSON
    def mcp_prompts(server: str | None, prompt: str | None, pairs: tuple[str, ...], as_json: bool) -> None:
        """List servers' prompts, or print one prompt rendered with its arguments.

        Exit status: 0 listed or printed; 1 a server failed or the prompt could not be had (said on
        stderr); 2 a usage or configuration error (an --arg without =)."""
        arguments = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise click.UsageError(f"--arg {pair!r}: expected KEY=VALUE")
            arguments[key] = value
        code = asyncio.run(_prompts(_toolbox(listing=False), server, prompt, arguments, as_json))
        if code:
            raise SystemExit(code)

    @mcp_group.command("logout")
    @global_options
    @click.argument("name")
    def mcp_logout(name: str) -> None:
        """Forget a server's sign-in (its tokens and registration) on this machine.

        Exit status: 0 signed out, or not signed in; 1 no url server has that name; 2 a usage or
        configuration error."""
        from ._config import own_folder
        from ._tokens import TokenFile

        toolbox = _toolbox()
        spec = {s.name: s for s in _specs(toolbox, plugin)}.get(name)
        if spec is None or spec.config.transport != "http":
            raise click.ClickException(f"no url server is called {name!r}; `pegboard mcp list` shows them")
        removed = TokenFile(own_folder(_context(toolbox, plugin)), spec).delete()
        click.echo(f"signed out of {name}" if removed else f"{name}: not signed in")

    @cli.group("serve", invoke_without_command=True)
    @global_options
    @MODE
    @click.option("--http", "http", metavar="HOST:PORT", default=None,
                  help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (PORT 0 picks a free one).")
    @click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
                  help="--http: the bearer token is the content of this file (0600) instead of a new one.")
    @click.option("--token-env", metavar="NAME", default=None,
                  help="--http: the bearer token is the value of this environment variable.")
    @click.option("--show-token", is_flag=True, help="--http: print the token itself on stderr, not only where it is.")
    @click.option("--no-auth", is_flag=True,
                  help="--http: ask no credential (any local user can call the tools): a single-user test setting.")
    @click.option("--allow-remote", is_flag=True,
                  help="Allow --http on an address other than loopback; needs --tls-cert/--tls-key or "
                       "--trusted-network.")
    @click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="--http: serve HTTPS with this certificate (PEM).")
    @click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
                  help="--http: the certificate's private key (PEM).")
    @click.option("--trusted-network", is_flag=True,
                  help="With --allow-remote and no TLS: the network is trusted (tokens and calls cross it in clear).")
    @click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
                  help="--http: stderr as lines for a person, or one JSON object per event (every request, "
                       "sign-in refused, call, approval) for a log collector.")
    @click.pass_context
    def serve(ctx: click.Context, mode: str | None, http: str | None, token_file: Path | None, token_env: str | None,
              show_token: bool, no_auth: bool, allow_remote: bool, tls_cert: str | None, tls_key: str | None,
              trusted_network: bool, log_format: str) -> None:
        """Offer pegboard's tools to an MCP client (stdio by default).

        Over --http every request must sign in: the bearer token stderr says
        where to find, or for a team an API key (`pegboard serve keys`) or an
        access token of the organisation's authorization server
        ([plugins.mcp.serve]).

        Exit status: 0 the client went away or the server was stopped; 1 the MCP SDK is not
        installed, or the server could not start; 2 a usage or configuration error (options that do
        not go together)."""
        if ctx.invoked_subcommand is not None:
            return
        from ._sdk import sdk_problem

        if (missing := sdk_problem()) is not None:
            raise click.ClickException(f"pegboard serve needs the MCP SDK: {missing}")
        from ._serve import TeamPlan, parse_address, run_serve

        http_only = {"--token-file": token_file is not None, "--token-env": token_env is not None,
                     "--show-token": show_token, "--no-auth": no_auth, "--allow-remote": allow_remote,
                     "--tls-cert": tls_cert is not None, "--tls-key": tls_key is not None,
                     "--trusted-network": trusted_network, "--log-format": log_format != "text"}
        if http is None:
            given = [name for name, on in http_only.items() if on]
            if given:
                raise click.UsageError(f"{', '.join(given)}: only with --http (stdio serves the one client that "
                                       "started it)")
            from ._serve_stdio import claim_stdio

            # Before the toolbox this command runs with is loaded: from here on
            # only the transport writes to the real stdout.
            wire = claim_stdio()
            run_serve(_toolbox(listing=False), mode=mode, wire=wire)
            return
        from ._serve_http import HttpPlan, TokenSource

        if (tls_cert is None) != (tls_key is None):
            raise click.UsageError("--tls-cert and --tls-key go together")
        if allow_remote and tls_cert is None and not trusted_network:
            raise click.UsageError(
                "--allow-remote needs TLS (--tls-cert and --tls-key), or --trusted-network to say that the network "
                "may see the token and every call in clear")
        if no_auth and (token_file is not None or token_env is not None or show_token):
            raise click.UsageError("--no-auth asks no token: it does not go with --token-file, --token-env or "
                                   "--show-token")
        if no_auth and allow_remote:
            raise click.UsageError("--no-auth is for a single-user test setting on loopback; it does not go with "
                                   "--allow-remote")
        if token_file is not None and token_env is not None:
            raise click.UsageError("--token-file and --token-env: choose one")
        host, port = parse_address(http, allow_remote)
        plan = HttpPlan(host=host, port=port, allow_remote=allow_remote,
                        tls=(tls_cert, tls_key) if tls_cert and tls_key else None, no_auth=no_auth,
                        tokens=TokenSource(file=token_file, env=token_env, show=show_token),
                        log_json=log_format == "json")
        toolbox = _toolbox(listing=False)
        context = _context(toolbox, plugin)
        config = toolbox.plugin_config(plugin).serve
        if no_auth and (config.api_keys or config.oauth is not None):
            raise click.UsageError("--no-auth asks no credential: it does not go with [plugins.mcp.serve] api_keys or "
                                   "oauth, which are for signing people in")
        from pegboard import StoreError

        from ._config import own_folder
        from ._serve_log import ServeLog

        team_plan = TeamPlan(config=config, store=context.store, log=ServeLog(json_lines=plan.log_json),
                             replica_timeout_s=config.replica_timeout_s)
        if config.api_keys or config.stateless or config.approvals == "approvers":
            try:  # the store answers, at this code's schema (the core's and ours), before anyone connects
                with context.store.begin(read_only=True):
                    pass
                toolbox.pending_calls("-")
            except StoreError as exc:
                raise click.ClickException(str(exc)) from None
            except Exception as exc:
                raise click.ClickException(f"the store cannot be used: {context.store.describe_error(exc)}") from None
        run_serve(toolbox, mode=mode, http=plan, data_folder=own_folder(context), team_plan=team_plan)

    @serve.group("keys")
    def keys_group() -> None:
        """API keys for `pegboard serve --http` ([plugins.mcp.serve] api_keys = true)."""

    @keys_group.command("add")
    @global_options
    @click.argument("name")
    @click.option("--expires", default=None, metavar="WHEN",
                  help="When the key stops working: a span (30d, 12h, 90m, 2w) or a date or time (2026-12-31).")
    @click.option("--level", type=click.Choice(["none", "read", "workspace", "unrestricted"]), default=None,
                  help="The most the key allows: its sessions' mode is clamped under this level.")
    @click.option("--approver", is_flag=True, help="The key may also answer pending calls on the approvals page.")
    @JSON
    def keys_add(name: str, expires: str | None, level: str | None, approver: bool, as_json: bool) -> None:
        """Make an API key for client NAME and print it once (only its hash is kept).

        NAME is the client identity its requests carry: the audit log's client and the
        [clients.NAME] table of the config.

        Exit status: 0 made (the key on stdout); 1 the store failed; 2 a usage or configuration error."""
        from ._serve_keys import make_key, parse_expiry

        try:
            expires_at = parse_expiry(expires) if expires is not None else None
            from ._serve_keys import check_name

            check_name(name)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        store = _keys_store(plugin)
        key, row = _store_call(store, lambda: make_key(store, name, level=level, approver=approver,
                                                        expires_at=expires_at))
        if as_json:
            click.echo(json.dumps({"key": key, **row.to_json()}, indent=2))
            return
        click.echo(key)
        until = f" until {_when(row.expires_at)}" if row.expires_at else ""
        click.echo(f"pegboard: API key {row.id} for client {name!r}{until} (level {level or 'any'}"
                   f"{', approver' if approver else ''}). It is shown this once; send it as "
                   "'Authorization: Bearer <key>'.", err=True)

    @keys_group.command("list")
    @global_options
    @JSON
    def keys_list(as_json: bool) -> None:
        """Every key: its id, client name, level, approver, when made, when it expires, state.

        Exit status: 0 listed; 1 the store failed; 2 a usage or configuration error."""
        from ._serve_keys import list_keys

        store = _keys_store(plugin)
        found = _store_call(store, lambda: list_keys(store))
        if as_json:
            click.echo(json.dumps([k.to_json() for k in found], indent=2))
            return
        if not found:
            click.echo("no API keys (pegboard serve keys add NAME)")
        for k in found:
            click.echo(f"{k.id}  {k.name:<24} {k.state():<8} level {k.level or 'any':<12}"
                       f"{'approver  ' if k.approver else '          '}made {_when(k.created_at)}"
                       + (f", expires {_when(k.expires_at)}" if k.expires_at else "")
                       + (f", revoked {_when(k.revoked_at)}" if k.revoked_at else ""))

    @keys_group.command("revoke")
    @global_options
    @click.argument("name_or_id")
    def keys_revoke(name_or_id: str) -> None:
        """Revoke a key (by its id), or every active key of a client (by its name).

        Every replica refuses it from its next request on.

        Exit status: 0 revoked; 1 no active key has that id or name, or the store failed; 2 a usage or
        configuration error."""
        from ._serve_keys import revoke_keys

        store = _keys_store(plugin)
        gone = _store_call(store, lambda: revoke_keys(store, name_or_id))
        if not gone:
            click.echo(f"pegboard: no active key has the id or name {name_or_id!r} (pegboard serve keys list)", err=True)
            raise SystemExit(1)
        for k in gone:
            click.echo(f"revoked {k.id} ({k.name})")


def _keys_store(plugin: str) -> Any:
    return _context(_toolbox(), plugin).store


def _store_call(store: Any, work: Any) -> Any:
    """The store's failure said in a line, the URL's password hidden, exit 1."""
    try:
        return work()
    except Exception as exc:
        click.echo(f"pegboard: {store.describe_error(exc)}", err=True)
        raise SystemExit(1) from None


def _when(stamp: float | None) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "-"

"""The ``pegboard`` command line."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .._api.policy import policy_for
from .shared import (ARGV, EXIT_NO_SUCH_TOOL, JSON, MODE, accept_global_options, complete_tool_names,
                          fail_config, fail_json, global_options, styled, terminal_host, wants_json)
from .shared import CLIState as _CLIState
from .shared import current_state as _state

if TYPE_CHECKING:
    from .._api.decisions import Decision

__all__ = ["cli", "main"]

# Moved to the public module pegboard.cli; the old address answers for one
# release (docs/plugins.md taught it), with a warning naming the new one.
_MOVED = {"CLIState": "pegboard.cli.CLIState"}


class _PegboardGroup(click.Group):
    """The top-level commands, then the core's groups and the plugins' commands, all added through
    ``pegboard_register_commands`` (the core's by ``CoreCommands``, first and without a toolbox).

    The conventions every command keeps are kept here, once: ``-h`` as well
    as ``--help`` (child contexts inherit it); a bare group (``pegboard``,
    ``pegboard tools``) prints its help and exits 0; with ``--json``
    anywhere on the line, an error is a JSON object on stdout."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGV] = list(args)
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare subgroup: its help is the answer
            click.echo(exc.ctx.get_help() if exc.ctx is not None else ctx.get_help())
            ctx.exit(0)
        except click.ClickException as exc:
            if not wants_json():
                raise
            fail_json(exc.format_message(), exc.exit_code, **getattr(exc, "details", {}))

    def _core(self, ctx: click.Context) -> click.Group:
        meta = ctx.find_root().meta
        cached: click.Group | None = meta.get("pegboard.core_commands")
        if cached is None:
            from .commands import CORE_COMMANDS

            cached = meta["pegboard.core_commands"] = click.Group()
            CORE_COMMANDS.pegboard_register_commands(cli=cached)
        return cached

    def _plugins(self, ctx: click.Context) -> click.Group:
        # Kept for one invocation (its root context), not for the process: an
        # embedding or a test may run the command line again with other plugins.
        meta = ctx.find_root().meta
        cached: click.Group | None = meta.get("pegboard.plugin_commands")
        if cached is None:
            group = click.Group()
            meta["pegboard.plugin_commands"] = group
            try:
                toolbox = ctx.ensure_object(_CLIState).toolbox(listing=True)
                for outcome in toolbox.hooks.each("pegboard_register_commands", cli=group,
                                                  own_context=toolbox.context_for):
                    if outcome.error is not None:
                        click.echo(f"pegboard: plugin {outcome.plugin!r} failed to add commands: {outcome.error}",
                                   err=True)
            except SystemExit:
                pass
            for command in group.commands.values():
                accept_global_options(command)
            cached = group
        return cached

    def list_commands(self, ctx: click.Context) -> list[str]:
        from .commands import CoreCommands

        return sorted({*super().list_commands(ctx), *CoreCommands.names, *self._plugins(ctx).list_commands(ctx)})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return (super().get_command(ctx, name) or self._core(ctx).get_command(ctx, name)
                or self._plugins(ctx).get_command(ctx, name))


@click.group(cls=_PegboardGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@global_options
@click.version_option(package_name="pegboard")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """pegboard: tools for LLM agents, through plugins.

    Exit status, for every command: 0 done; 1 a deny, a failed call or a
    failed check; 2 a usage or config error; 3 `permissions check`'s ask;
    4 no such tool (`tools show`, `call`, `permissions check`). With
    --json, an error is a JSON object on stdout ({"error", "exit_code"}).
    Colour only at a terminal, never with NO_COLOR set."""
    ctx.ensure_object(_CLIState)
    if os.environ.get("NO_COLOR"):  # https://no-color.org: any value but empty switches colour off
        ctx.color = False
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
        ctx.exit(0)


class NoSuchTool(click.ClickException):
    """A command named a tool nobody registered: exit 4 (not 1, a deny's)."""

    exit_code = EXIT_NO_SUCH_TOOL

    def __init__(self, name: str, known: Iterable[str]) -> None:
        from .._util.nearest import nearest

        meant = nearest(name, known)
        self.details = {"tool": name, "did_you_mean": meant}
        hint = f"; did you mean {meant!r}?" if meant else ""
        super().__init__(f"no tool called {name!r}{hint} (`pegboard tools list` shows them)")


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


# --- tools -------------------------------------------------------------------


@cli.group()
def tools() -> None:
    """The tools the catalogue offers."""


@tools.command("list")
@global_options
@MODE
@JSON
def tools_list(mode: str | None, as_json: bool) -> None:
    """Every tool at a glance, with why an absent one is absent.

    Exit status: 0 every tool listed (problems that left every tool in place are said on stderr); 1
    an enabled plugin failed to load or a tool is broken (the rest are listed); 2 a usage or
    configuration error."""
    from .listing import load_rows, store_rows

    state = _state()
    root = state.cwd or Path.cwd()
    # (plugins handed over in code, by pegboard.testing's runner, are not what the cache describes)
    cached = load_rows(root, state.config, mode) if state._given is None else None
    failed: list[str] = []
    refused: list[str] = []
    if cached is None:
        toolbox = state.toolbox(inventory=True, listing=True)
        broken = toolbox.check_tools()
        # What a tool may do, in the listed mode only: another mode's examples may cost more to
        # decide (Bash's in acceptEdits look through the working directories); `tools show` has all.
        listed_mode = mode or toolbox.settings.core.permissions.mode
        inventory = [{**s.to_json(), "default_mode": toolbox.settings.core.permissions.mode,
                      **({"may": toolbox.permission_examples(s.tool, [listed_mode])}
                         if s.enabled and s.tool.permission_examples else {})}
                     for s in toolbox.listed_statuses()]
        notes = toolbox.plugins.notes()
        failed = [f"plugin {r.name!r} failed, so its tools are missing: {r.error}"
                  for r in toolbox.records.values() if r.error and r.enabled]
        # every tool left out or refused gets its line (a refused name is a warning of its plugin's)
        failed += [f"tool {name} ({toolbox.owner_of(name)}) is left out: broken: {why}"
                   for name, why in broken.items()]
        refused = [f"plugin {r.name!r}: {w}" for r in toolbox.records.values() for w in r.warnings
                   if w.startswith("tool ") and " not registered: " in w]
        if not toolbox.settings.problems and not failed and not refused and state._given is None:
            store_rows(root, state.config, inventory, [r.module for r in toolbox.records.values()],
                       toolbox.plugins.watched_files(), notes, mode)
        notes = [*notes, *toolbox.settings.problems]
    else:
        inventory, notes = cached
    policy = policy_for(mode or (inventory[0]["default_mode"] if inventory else "default"))
    rows = []
    for entry in inventory:
        row = {k: v for k, v in entry.items() if k != "default_mode"}
        if row["enabled"] and not policy.offers_tool(row["permission"], row["read_only"]):
            row["enabled"] = False
            row["status"] = f"not offered in {policy.name} (needs {row['permission']})"
        if "may" in row and not row["enabled"]:
            del row["may"]
        rows.append(row)
    for line in notes:  # what plugins would offer but do not list yet (stderr: JSON stays rows)
        click.echo(f"note: {line}", err=True)
    for line in [*failed, *refused]:
        click.echo(f"pegboard: {line}", err=True)
    if as_json:
        _emit_json(rows)
    else:
        # The columns as wide as their longest entry: plugin names such as structured_output pass 10.
        name_w = max([28, *(len(r["name"]) + 1 for r in rows)])
        plugin_w = max([10, *(len(r["plugin"]) for r in rows)])
        click.echo(f"{'NAME':<{name_w}} {'PLUGIN':<{plugin_w}} {'LOADING':<9} {'RO':<4} {'PERMISSION':<13} STATUS")
        for r in rows:
            click.echo(f"{r['name']:<{name_w}} {r['plugin']:<{plugin_w}} {r['loading']:<9} "
                       f"{'yes' if r['read_only'] else '':<4} {r['permission']:<13} {r['status']}")
            examples = r.get("may", {}).get(policy.name)
            if examples:  # what a tool offered at a low level may still do here (Bash at read)
                said = "; ".join(f"{e['label']}: {styled(e['decision'], e['decision'])}" for e in examples)
                click.echo(f"{'':<{name_w}} in {policy.name}: {said}")
    if failed or any(r["status"].startswith("broken: ") for r in rows):
        sys.exit(1)


@tools.command("cost")
@global_options
@MODE
@JSON
def tools_cost(mode: str | None, as_json: bool) -> None:
    """What each plugin and MCP server adds to every request: loaded tools'
    definitions and deferred tools' lines, in characters and estimated tokens.

    Exit status: 0 the table printed; 2 a usage or configuration error."""
    toolbox = _state().toolbox(listing=True)
    session = toolbox.session(mode)
    catalogue = session.catalogue()
    by_tool = {t.name: t for t in session.offered()}
    rows: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        tool = by_tool.get(name)
        source = (f"{tool.plugin} {tool.group}" if tool.group else tool.plugin) if tool else "core"
        return rows.setdefault(source, {"source": source, "loaded": 0, "deferred": 0, "characters": 0})

    for loaded in catalogue.to_anthropic():
        r = row(loaded["name"])
        r["loaded"] += 1
        r["characters"] += len(json.dumps(loaded, ensure_ascii=False))
    listing = catalogue.deferred_text()
    full = sum(len(f"- {d.name}: {d.summary}") + 1 for d in catalogue.deferred)
    for deferred in catalogue.deferred:
        row(deferred.name)["deferred"] += 1
    if listing and full:  # each source's share of the listing actually sent
        for deferred in catalogue.deferred:
            row(deferred.name)["characters"] += round((len(f"- {deferred.name}: {deferred.summary}") + 1)
                                                      * len(listing) / full)
    table = sorted(rows.values(), key=lambda r: -r["characters"])
    for r in table:
        r["tokens"] = round(r["characters"] / 4)  # the usual estimate: about four characters a token
    total = sum(r["characters"] for r in table)
    summary = {"total_characters": total, "total_tokens": round(total / 4),
               "deferred_listing_characters": len(listing), "deferred_budget": catalogue.deferred_budget}
    apis = _cost_per_api(catalogue)
    if as_json:
        _emit_json({"sources": table, **summary, "apis": apis})
        return
    click.echo(f"{'SOURCE':<28} {'LOADED':>6} {'DEFERRED':>8} {'CHARACTERS':>10} {'~TOKENS':>8}")
    for r in table:
        click.echo(f"{r['source']:<28} {r['loaded']:>6} {r['deferred']:>8} {r['characters']:>10,} {r['tokens']:>8,}")
    click.echo(f"{'total':<28} {'':>6} {'':>8} {total:>10,} {round(total / 4):>8,}")
    click.echo(f"deferred listing: {len(listing):,} characters (budget {catalogue.deferred_budget:,}, "
               "[tools] deferred_budget)")
    click.echo("\nper API (tools and the deferred listing, as each export sends them):")
    for api in apis:
        click.echo(f"  {api['api']:<40} {api['characters']:>10,} characters {api['tokens']:>8,} ~tokens")
    for line in toolbox.plugins.notes():
        click.echo(f"note: {line}", err=True)


def _cost_per_api(catalogue: Any) -> list[dict[str, Any]]:
    """What each model API's export of the catalogue sends with every
    request: the tools, and the deferred listing where ToolSearch stands in
    for the provider's own tool search (docs/embedding.md, "The catalogue's cost")."""
    listing = len(catalogue.deferred_text())
    exports = [("anthropic", catalogue.to_anthropic(), listing),
               ("anthropic defer_loading", catalogue.to_anthropic(defer_loading=True), 0),
               ("openai chat strict", catalogue.to_openai(strict=True), listing),
               ("openai responses strict", catalogue.to_responses(strict=True), listing),
               ("openai responses strict defer_loading", catalogue.to_responses(strict=True, defer_loading=True), 0)]
    rows = []
    for api, tools, extra in exports:
        characters = len(json.dumps(tools, ensure_ascii=False)) + extra
        rows.append({"api": api, "tools": len(tools), "characters": characters, "tokens": round(characters / 4)})
    return rows


@tools.command("show")
@global_options
@click.argument("name", shell_complete=complete_tool_names)
@JSON
def tools_show(name: str, as_json: bool) -> None:
    """A tool's description and input schema, why it is absent if it is, and
    what it may do in each mode (a tool with permission examples).

    Exit status: 0 the tool shown; 4 no tool has that name (the nearest is named); 2 a usage or
    configuration error."""
    toolbox = _state().toolbox(inventory=True, listing=True)
    if name not in toolbox.statuses:
        raise NoSuchTool(name, toolbox.statuses)
    from .._api.catalogue import augmented_schema

    [status] = toolbox.listed_statuses(name)
    tool = status.tool
    description = toolbox.description(tool)
    schema = augmented_schema(tool, toolbox.settings.core.background.enabled, toolbox.session())
    may = toolbox.permission_examples(tool) if status.enabled else {}
    if as_json:
        _emit_json({**status.to_json(), **({"may": may} if may else {}), "description": description,
                    "input_schema": schema})
        return
    click.echo(f"{tool.name} ({tool.plugin}; {status.status})\n")
    if may:
        click.echo("What it may do, mode by mode, before anyone is asked:")
        for mode, examples in may.items():
            said = "; ".join(f"{e['label']}: {styled(e['decision'], e['decision'])}" for e in examples)
            click.echo(f"  {mode}: {said}")
        click.echo()
    click.echo(description)
    click.echo("\nInput schema:")
    click.echo(json.dumps(schema, indent=2))


# --- call --------------------------------------------------------------------


def _parse_input(text: str) -> Any:
    """``--input``: JSON, or ``-`` for JSON read from standard input."""
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--input is not valid JSON: {exc}") from None


@cli.command("call")
@global_options
@click.argument("tool", shell_complete=complete_tool_names)
@click.option("--input", "input_json", default="{}",
              help="The tool's arguments as a JSON object ('-': read them from standard input).")
@click.option("--session", "session_id", default=None,
              help="Run in this durable session (created if new): its scratchpad and plugins' state last.")
@click.option("--stream/--no-stream", "stream", default=None,
              help="Print the tool's output as it comes (the default at a terminal, never on a pipe unless asked).")
@MODE
@JSON
def call(tool: str, input_json: str, session_id: str | None, mode: str | None, as_json: bool,
         stream: bool | None) -> None:
    """Run one tool through the whole pipeline in a fresh session (or in the
    durable session --session names).

    Exit status: 0 the tool ran and its result is not an error; 1 the call was denied, or the tool's
    result is an error (the output says which), or the store failed (--session); 4 no tool has that
    name (the nearest is named); 2 a usage or configuration error (--input that is not JSON, a bad
    --session)."""
    import asyncio

    arguments = _parse_input(input_json)
    host = terminal_host()
    state = _state()
    if host is not None:
        from .commands.trust import offer_trust

        offer_trust(state.cwd or Path.cwd(), state.config)
    toolbox = state.toolbox(host=host)
    try:
        session = toolbox.session(mode, session_id=session_id)
    except ValueError as exc:
        raise click.UsageError(f"--session: {exc}") from None
    except Exception as exc:
        from .commands.sessions import store_failure

        store_failure(toolbox, exc)

    streaming = (sys.stdout.isatty() if stream is None else stream) and not as_json
    shown = ""

    async def run() -> Any:
        nonlocal shown
        async with session:
            if not streaming:
                return await session.call(tool, arguments)
            from .stream_output import call_streaming

            result, shown = await call_streaming(session, tool, arguments)
            return result

    result = asyncio.run(run())
    if as_json:
        _emit_json({"is_error": result.is_error, "content": [{k: v for k, v in c.model_dump().items() if k != "annotations" or v} for c in result.content],
                    **({"structured_content": result.structured_content} if result.structured_content else {})})
    else:
        for part in result.content:
            if part.type == "text":
                if shown:
                    from .stream_output import unshown

                    text, shown = unshown(part.text, shown), ""
                    if text:
                        click.echo(text)
                    continue
                click.echo(part.text)
            else:
                click.echo(f"[{part.type} {getattr(part, 'mime_type', '')}]")
    if result.is_error and tool not in toolbox.statuses:
        sys.exit(EXIT_NO_SUCH_TOOL)
    sys.exit(1 if result.is_error else 0)


# --- permissions -------------------------------------------------------------


@cli.group()
def permissions() -> None:
    """Permission decisions and rules."""


def _decide(toolbox: Any, sessions: dict[str, Any], tool_name: str, arguments: Any, mode: str | None,
            client: str | None = None) -> Decision:
    """One call's decision, as ``Session.decide`` reaches it, for ``client``
    (a server's signed-in client, by id) when given. Sessions are made once
    per mode (``sessions`` caches them across a batch)."""
    from .._engine.arguments import decide_call

    key = mode or ""
    session = sessions.get(key)
    if session is None:
        from .._api.clients import Client

        session = sessions[key] = toolbox.session(mode, client=Client(client) if client else None)
    if not isinstance(arguments, dict):
        from .._api.decisions import Decision

        return Decision("deny", f"the input for {tool_name} must be a JSON object", "validation")
    return decide_call(session, tool_name, arguments)


# `permissions check` exit status: scripts branch on it (docs/permissions.md).
EXIT_ALLOW, EXIT_DENY, EXIT_ASK = 0, 1, 3


def _batch_line(toolbox: Any, sessions: dict[str, Any], number: int, line: str, mode: str | None,
                client: str | None = None) -> dict[str, Any]:
    from .._loading.config import ConfigError

    try:
        item = json.loads(line)
        if not isinstance(item, dict):
            raise ValueError("expected a JSON object")
        if "tool" not in item:
            raise ValueError('missing "tool"')
        item_mode = item.get("mode") or mode
        if item_mode is not None:
            policy_for(item_mode)  # ValueError names the choices
        return _decide(toolbox, sessions, str(item["tool"]), item.get("input", {}), item_mode, client).to_json()
    except ConfigError as exc:
        reason = "; ".join(exc.problems)
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        reason = str(exc)
    return {"decision": "deny", "reason": f"line {number}: not a valid request ({reason})", "source": "input"}


@permissions.command("check")
@global_options
@click.argument("tool", required=False, shell_complete=complete_tool_names)
@click.option("--input", "input_json", default="{}",
              help="The call's arguments as JSON ('-': read them from standard input).")
@click.option("--batch", type=click.File("r"), default=None,
              help='JSON lines {"tool","input","mode"} ("-" for stdin); one JSON line out per line in, in order.')
@MODE
@click.option("--client", "client", metavar="ID", default=None,
              help="Decide as for this signed-in client of a server: its [clients.ID] mode and rules apply.")
@JSON
def permissions_check(tool: str | None, input_json: str, batch: Any, mode: str | None, client: str | None,
                      as_json: bool) -> None:
    """The decision for a call (allow, ask or deny), why, and who decided.

    "ask" means a person (or auto's classifier) would be consulted; with
    nobody to ask, a call that asks is denied.

    Exit status: 0 allow (with --batch: every line answered, each saying its
    decision); 1 deny; 3 ask; 4 no tool has that name (the decision is a deny
    naming the nearest); 2 a usage or configuration error (nothing was
    decided).
    """
    from .._loading.config import ConfigError

    if batch is None and tool is None:
        raise click.UsageError("give a TOOL or --batch FILE")
    if client is not None and (not client.strip() or len(client) > 200):
        raise click.BadParameter("a client id is a non-empty string of at most 200 characters", param_hint="--client")
    toolbox = _state().toolbox()
    sessions: dict[str, Any] = {}
    if batch is not None:
        if tool is not None:
            raise click.UsageError("give a TOOL or --batch FILE, not both")
        try:
            if mode is not None or client is not None:
                from .._api.clients import Client

                sessions[mode or ""] = toolbox.session(mode, client=Client(client) if client else None)
        except ConfigError as exc:
            fail_config(exc)
        out: list[str] = []
        dumps = json.dumps
        for number, line in enumerate(batch, 1):
            if not line.strip():
                continue
            out.append(dumps(_batch_line(toolbox, sessions, number, line, mode, client)))
            if len(out) >= 1000:  # write in chunks: one echo per line is most of the time at 10k lines
                click.echo("\n".join(out))
                out.clear()
        if out:
            click.echo("\n".join(out))
        return
    try:
        decision = _decide(toolbox, sessions, str(tool), _parse_input(input_json), mode, client)
    except ConfigError as exc:
        fail_config(exc)
        return
    if as_json:
        click.echo(json.dumps(decision.to_json()))
    else:
        click.echo(f"{styled(decision.decision, decision.decision)}: {decision.reason}\nsource: {decision.source}")
        for rule in decision.suggestions:
            click.echo(f"rule that would allow it: {rule}")
    if str(tool) not in toolbox.statuses:
        sys.exit(EXIT_NO_SUCH_TOOL)
    sys.exit({"allow": EXIT_ALLOW, "deny": EXIT_DENY}.get(decision.decision, EXIT_ASK))


@permissions.command("add")
@global_options
@click.argument("behavior", type=click.Choice(["allow", "ask", "deny"]))
@click.argument("rule")
@click.option("--project", is_flag=True,
              help="Add it to the project's .pegboard/config.toml (a trusted project only), not your user config.")
@JSON
def permissions_add(behavior: str, rule: str, project: bool, as_json: bool) -> None:
    """Add RULE (such as 'Bash(npm run test:*)' or 'Read(./.env)') to
    [permissions] BEHAVIOR of your user config, or with --project of a
    trusted project's, keeping the file's comments. The rule is parsed by
    the plugin that owns its tool first: one that does not parse, or names
    no known tool, is refused with why and nothing is written.

    Exit status: 0 added, or there already; 1 refused (why is on stderr; nothing was written); 2 a
    usage or configuration error."""
    from .config_edit import add_rule

    target, changed = add_rule(_state(), behavior, rule, project)
    if as_json:
        _emit_json({"file": str(target), "behavior": behavior, "rule": rule, "added": changed})
    else:
        click.echo(f"{'added' if changed else 'already there'}: {behavior} {rule!r} in {target}")


@permissions.command("list")
@global_options
@JSON
def permissions_list(as_json: bool) -> None:
    """Every rule in force, with the layer and file it came from, and the
    protected-path patterns.

    Exit status: 0 the rules printed; 2 a usage or configuration error."""
    toolbox = _state().toolbox()
    rows = toolbox.permissions.listing()
    if as_json:
        _emit_json({"rules": rows, "protected_paths": toolbox.permissions.protected_patterns})
        return
    if not rows:
        click.echo("no permission rules ([permissions] allow, ask, deny in any config layer)")
    for r in rows:
        flag = "" if r["active"] else f"  (inactive: {r['why']})"
        note = f"  ({r['note']})" if r.get("note") else ""
        click.echo(f"{r['behavior']:<6} {r['rule']:<40} {r['layer']:<15} {r['file'] or '-'}{flag}{note}")
    click.echo(f"protected paths: {', '.join(toolbox.permissions.protected_patterns)}")


# --- config ------------------------------------------------------------------


@cli.group("config")
def config_group() -> None:
    """Where configuration lives and what it says."""


@config_group.command("set")
@global_options
@click.argument("key", shell_complete=lambda ctx, param, incomplete: _complete_keys(incomplete))
@click.argument("value")
@click.option("--project", is_flag=True,
              help="Set it in the project's .pegboard/config.toml (a trusted project only), not your user config.")
@JSON
def config_set(key: str, value: str, project: bool, as_json: bool) -> None:
    """Set KEY (dotted, as `config show` lists it: permissions.mode,
    tools.block, plugins.web.timeout_s) to VALUE in your user config, or
    with --project in a trusted project's. VALUE is read as TOML (true, 30,
    '["Bash"]') and else taken as text. The change is checked against the
    config models (and the plugins' own) before it is written; one that
    would not load is refused with why and nothing is written. The file
    keeps its comments and layout.

    Exit status: 0 written; 1 refused (why is on stderr; nothing was written); 2 a usage or
    configuration error."""
    from .config_edit import set_value

    target, written = set_value(_state(), key, value, project)
    if as_json:
        _emit_json({"file": str(target), "key": key, "value": written})
    else:
        click.echo(f"{key} = {json.dumps(written)} in {target}")


def _complete_keys(incomplete: str) -> list[Any]:
    """Shell completion of config keys: the core's tables' keys (dotted)."""
    from click.shell_completion import CompletionItem

    from .._loading.config import CoreConfig, model_keys

    keys = [f"{table}.{key}" for table in model_keys(CoreConfig, ()) for key in model_keys(CoreConfig, (table,))]
    return [CompletionItem(k) for k in [*keys, "plugins."] if k.startswith(incomplete)]


@config_group.command("path")
@global_options
@JSON
def config_path(as_json: bool) -> None:
    """The config files, lowest precedence first, and whether the project is trusted.

    Exit status: 0 the files printed; 2 a usage error."""
    from .._loading.config import config_dir, policy_path
    from .._loading.trust import TRUST_FILE, TrustStore, project_grants_file

    state = _state()
    root = (state.cwd or Path.cwd()).resolve()
    try:
        trusted = "trusted" if TrustStore(config_dir()).is_trusted(root) else "not trusted: it may only narrow"
    except ValueError as exc:
        trusted = str(exc)
    paths = [("user", config_dir() / "config.toml"), ("user grants", config_dir() / "granted.toml"),
             ("project", root / ".pegboard" / "config.toml"),
             ("project grants", project_grants_file(config_dir(), root))]
    if state.config:
        paths.append(("explicit", state.config))
    paths += [("policy", policy_path()), ("trusted folders", config_dir() / TRUST_FILE),
              ("local plugins", config_dir() / "plugins")]  # one-file plugins (docs/plugins.md)
    if as_json:
        _emit_json({"files": [{"layer": name, "path": str(path), "exists": Path(path).exists()}
                              for name, path in paths],
                    "project": str(root), "trusted": trusted == "trusted", "trust": trusted})
        return
    for name, path in paths:
        click.echo(f"{name:<15} {path}" + (f"  ({trusted})" if name == "project" else ""))


def _flatten(data: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(data, dict) and data:
        out = []
        for key, value in data.items():
            out += _flatten(value, (*prefix, key))
        return out
    return [(prefix, data)]


@config_group.command("show")
@global_options
@JSON
def config_show(as_json: bool) -> None:
    """The merged config, with the file each value came from, and what the
    project's files set that was not applied.

    Exit status: 0 the config printed; 2 a usage or configuration error."""
    from .._loading.trust import TRUST_FILE

    # The whole toolbox: plugins strip the user-scope options of their own
    # tables, and report what of the project's they left out.
    toolbox = _state().toolbox()
    settings = toolbox.settings
    effective = settings.core.model_dump(mode="json")
    # Protected paths add up across layers and plugins; show the list in force, not the last layer's.
    effective["permissions"]["protected_paths"] = list(toolbox.permissions.protected_patterns)
    effective["plugins"] = settings.merged.get("plugins", {})
    from .._util.redact import hide_secrets

    rows: list[dict[str, Any]] = []
    for keys, value in _flatten(effective):
        if not keys:
            continue
        value = hide_secrets(value, keys[-1])  # docs/config.md: a URL's password is never printed
        source = settings.source_of(*keys)
        if keys[:1] == ("permissions",) and keys[1:2] and keys[1] in ("allow", "ask", "deny", "protected_paths"):
            source = "every layer (see `pegboard permissions list`)"
        rows.append({"key": ".".join(keys), "value": value, "source": source})
    from .._loading.config import config_dir

    rows.insert(0, {"key": "trusted", "value": settings.trusted, "source": str(config_dir() / TRUST_FILE)})
    ignored = [{"key": i.what, "value": None, "source": i.source, "ignored": i.kind, "why": i.describe()}
               for i in settings.ignored]
    if as_json:
        _emit_json([*rows, *ignored])
        return
    for r in rows:
        click.echo(f"{r['key']} = {json.dumps(r['value'])}    # {r['source']}")
    for r in ignored:
        click.echo(f"# not applied: {r['why']}")
    if not settings.trusted and any(i.kind == "untrusted" for i in settings.ignored):
        click.echo(f"# `pegboard trust {settings.root}` applies what the folder's files set")


# --- doctor ------------------------------------------------------------------


@cli.command("doctor")
@global_options
@JSON
def doctor(as_json: bool) -> None:
    """Config, trust, plugins and each plugin's own health checks, one line each.

    Exit status: 0 no check failed (WARN lines may be there); 1 a check failed (a FAIL line;
    configuration problems are FAIL lines too); 2 a usage error."""
    from .commands.trust import trust_lines, unknown_rule_lines
    from .._loading.config import ConfigError, load_settings

    state = _state()
    failed = False
    rows: list[dict[str, str]] = []

    def line(status: str, name: str, detail: str = "") -> None:
        nonlocal failed
        failed = failed or status == "fail"
        if as_json:
            rows.append({"status": status, "name": name, "detail": detail})
        else:
            click.echo(f"{styled(status.upper().ljust(5), status)} {name}{': ' + detail if detail else ''}")

    def finish() -> NoReturn:
        if as_json:
            _emit_json({"ok": not failed, "checks": rows})
        sys.exit(1 if failed else 0)

    root = (state.cwd or Path.cwd())
    try:
        load_settings(root, state.config)  # a problem here is a FAIL line, not a stack of errors
        # With the inventory: a rule for a switched-off plugin's tool names a known tool.
        toolbox = state._load_toolbox(inventory=True, listing=True)
    except ConfigError as exc:
        for problem in exc.problems:
            line("fail", "config", problem)
        finish()
    except SystemExit:
        line("fail", "config", "the toolbox could not be loaded")
        finish()
    for layer in toolbox.settings.layers:
        if layer.path:
            line("ok", f"config {layer.name}", str(layer.path))
    for problem in toolbox.settings.problems:
        line("fail", "config", problem)
    for status, detail in unknown_rule_lines(toolbox):
        line(status, "config", detail)
    for key, name in toolbox.unknown_listed:
        # a block naming nothing looks like protection; an allow or a level naming nothing does nothing
        line("fail" if key == "block" else "warn", "config",
             f"{toolbox.settings.source_of('tools', key)}: [tools] {key}: {name!r} names no known tool, so it "
             f"{'blocks' if key == 'block' else 'changes'} nothing")
    for record in toolbox.records.values():
        if record.error:
            line("fail", f"plugin {record.name}", record.error)
            continue
        if not record.enabled:
            line("ok", f"plugin {record.name}", "disabled")
            continue
        line("ok", f"plugin {record.name}", f"{len(record.tools)} tools")
        for warning in record.warnings:
            line("warn", f"plugin {record.name}", warning)
        for name in record.tools:
            tool_status = toolbox.statuses.get(name)
            if tool_status is not None and tool_status.enabled:
                toolbox.tool_problem(tool_status.tool, import_handler=True)
        for name, why in record.broken.items():
            line("fail", f"{record.name}: tool {name}", f"broken: {why}")
        try:
            checks = toolbox.hooks.one(record.obj, "pegboard_doctor", config=record.config,
                                       context=toolbox.context_for(record.name)) or []
            for check in checks:
                line(check.status, f"{record.name}: {check.name}", check.detail)
        except Exception as exc:
            line("fail", f"{record.name}: health check", f"{type(exc).__name__}: {exc}")
    from .commands.store import store_checks

    for check in store_checks(toolbox):
        line(check.status, check.name, check.detail)
    # Last, so that what plugins left out while loading is listed too.
    for level, name, detail in trust_lines(toolbox.settings):
        line(level, name, detail)
    finish()


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script: eval "$(pegboard completion bash)"
    in ~/.bashrc (zsh: ~/.zshrc; fish: pegboard completion fish | source).

    Exit status: 0 the script printed; 2 a shell that is not bash, zsh or fish."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None  # click ships all three
    click.echo(cls(cli, {}, "pegboard", "_PEGBOARD_COMPLETE").source())



def main() -> None:
    """The console script: the command line of a process that ends with the command."""
    from .._util.progress import enable_progress

    enable_progress()
    cli(prog_name="pegboard", obj=_CLIState(_freeze_after_load=True, _plugin_output_to_stderr=True))


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        from .._util.deprecation import moved

        return moved(__name__, name, _MOVED[name], _CLIState)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

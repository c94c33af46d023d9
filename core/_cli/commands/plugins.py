"""``pegboard plugins``: what is installed, and the plugin author's kit
(``plugins check``, ``plugins new``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..shared import JSON, complete_plugin_names, current_state, fail_config, global_options
from ..._loading.config import ConfigError
from ..._engine.plugin_check import check_plugin
from ..._util.progress import progress
from ..scaffold import ScaffoldError, new_plugin

__all__ = ["plugins_group"]


@click.group("plugins")
def plugins_group() -> None:
    """Installed plugins, and checking and starting your own."""


@plugins_group.command("list")
@global_options
@JSON
def plugins_list(as_json: bool) -> None:
    """Every discovered plugin: where it came from, version, state, the hooks
    it implements, tools, error, broken tools and warnings (a tool refused for
    its name, a hook never called).

    Exit status: 0 the plugins listed, failed ones included (their errors are in the listing); 2 a
    usage or configuration error."""
    toolbox = current_state().toolbox(inventory=True, listing=True)
    toolbox.check_tools()
    rows = [r.to_json() for r in toolbox.records.values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    for r in rows:
        state = "error" if r["error"] else ("enabled" if r["enabled"] else "disabled")
        origin = (r["distribution"] or "-") if r["origin"] == "entry point" else f"{r['origin']} {r['file'] or ''}"
        click.echo(f"{r['name']:<12} {state:<9} {origin} {r['version'] or ''}  "
                   f"tools: {', '.join(r['tools']) or '-'}")
        if r["hooks"]:
            click.echo(f"{'':<12} hooks: {', '.join(r['hooks'])}")
        if r["error"]:
            click.echo(f"{'':<12} {r['error']}")
        for name, why in r["broken_tools"].items():
            click.echo(f"{'':<12} tool {name} is broken: {why}")
        for warning in r["warnings"]:
            click.echo(f"{'':<12} warning: {warning}")


@plugins_group.command("check")
@click.argument("name", shell_complete=complete_plugin_names)
@global_options
@JSON
def plugins_check(name: str, as_json: bool) -> None:
    """Check plugin NAME before you ship it: every lazy handler and input
    model imported, every input schema validated, every tool described,
    misspelt hooks and taken tool names reported, its sample rules
    (pegboard_rule_samples) compiled through its matcher and tried on its
    sample calls, and combine() held to matches(). One line per problem.

    Exit status: 0 no problem found; 1 a problem found (one line each); 2 a usage or configuration
    error."""

    state = current_state()
    try:
        report = check_plugin(name, state._given.get(name) if state._given else None, cwd=state.cwd,
                              config=state.config, installed=state._only)
    except ConfigError as exc:
        fail_config(exc)
    if as_json:
        click.echo(json.dumps({"plugin": name, "ok": report.ok, "problems": report.problems,
                               "notes": report.notes, "checked": report.checked}, indent=2))
    else:
        click.echo(str(report))
    if not report.ok:
        sys.exit(1)


@plugins_group.command("new")
@click.argument("name")
@click.option("--dir", "parent", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Where to make the distribution's folder.")
@click.option("--tool", "tool", default=None, help="The tool's name (default: NAME in CamelCase).")
def plugins_new(name: str, parent: Path, tool: str | None) -> None:
    """Start a plugin: a folder pegboard-NAME holding a ready distribution
    (pyproject.toml with the entry point, one tool with its description, a
    config model, tests using pegboard.testing) that passes its own tests
    and `pegboard plugins check NAME` as made.

    Exit status: 0 the folder made; 2 a usage error, or a NAME or folder that cannot be used (the
    reason on stderr)."""

    try:
        with progress(f"Making pegboard-{name}") as shown:
            folder = new_plugin(name, parent, tool=tool, wrote=lambda path: shown.step(f"wrote {path}"))
    except ScaffoldError as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(2)
    click.echo(f"made {folder}")
    click.echo(f"next: pip install -e '{folder}[test]' && (cd {folder} && pytest) && pegboard plugins check {name}")

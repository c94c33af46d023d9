"""``pegboard plugins``: what is installed, and the plugin author's kit
(``plugins check``, ``plugins new``)."""

from __future__ import annotations

import json

import click

from ._cli_shared import JSON, current_state, global_options

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
    its name, a hook never called)."""
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

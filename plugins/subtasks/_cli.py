"""``pegboard agents list`` and ``pegboard agent run``."""

from __future__ import annotations

import json
import sys

import click

from pegboard.cli import JSON, MODE, current_state, global_options, terminal_host

__all__ = ["agent_group", "agents_group"]


@click.group("agents")
def agents_group() -> None:
    """Agent types (sub-agent definitions)."""


def _definitions() -> object:
    from pegboard import PluginContext

    from ._describe import definitions_for

    toolbox = current_state().toolbox(listing=True)
    for name, record in toolbox.records.items():
        if record.module == __package__:
            if not record.enabled or record.error:
                click.echo(f"pegboard: the subtasks plugin is not loaded: {record.error or 'disabled'}", err=True)
                sys.exit(1)
            context = toolbox.context_for(name)
            assert isinstance(context, PluginContext)
            return definitions_for(context)
    click.echo("pegboard: the subtasks plugin is not installed", err=True)
    sys.exit(1)


@agents_group.command("list")
@global_options
@JSON
def agents_list(as_json: bool) -> None:
    """Every agent type, where it comes from, and those shadowed, broken or not read."""
    from ._definitions import Definitions

    found = _definitions()
    assert isinstance(found, Definitions)
    if as_json:
        click.echo(json.dumps(found.to_json(), indent=2))
        return
    for definition in found:
        tools = "all" if definition.tools is None else ",".join(definition.tools)
        mode = definition.permission_mode or "inherit"
        click.echo(f"{definition.name}\t{definition.source}\ttools={tools}\tmode={mode}\t{definition.description}")
        for note in definition.notes:
            click.echo(f"  note: {note}")
    for shadowed in found.shadowed:
        where = shadowed.definition.path or shadowed.definition.source
        click.echo(f"shadowed: {shadowed.definition.name} ({where}) by the {shadowed.by.source} one")
    for broken in found.broken:
        click.echo(f"broken: {broken.path or broken.source}: {broken.reason}")
    for skipped in found.skipped:
        click.echo(f"not read: {skipped.folder}: {skipped.why_not}")


@click.group("agent")
def agent_group() -> None:
    """Run an agent from the command line."""


@agent_group.command("run")
@global_options
@click.option("--agent", "agent_type", default=None, help="The agent type (default: general-purpose).")
@click.option("--session", "session_id", default=None,
              help="Run it as a child of this durable session, so SendMessage can follow up later.")
@MODE
@JSON
@click.argument("prompt")
def agent_run(prompt: str, agent_type: str | None, session_id: str | None, mode: str | None,
              as_json: bool) -> None:
    """Run one agent on PROMPT with the configured runner and print its report.

    Its calls are decided like any other; at a terminal, asks go to you."""
    import asyncio

    toolbox = current_state().toolbox(host=terminal_host())
    label = " ".join(prompt.split()[:5]) or "task"

    async def run() -> object:
        async with toolbox.session(mode, session_id=session_id) as session:
            return await session.call("Agent", {"description": label, "prompt": prompt,
                                                "subagent_type": agent_type, "run_in_background": False})

    result = asyncio.run(run())
    from pegboard import ToolResult

    assert isinstance(result, ToolResult)
    if as_json:
        click.echo(json.dumps({"is_error": result.is_error, "text": result.text_content()}, indent=2))
    else:
        click.echo(result.text_content())
    sys.exit(1 if result.is_error else 0)

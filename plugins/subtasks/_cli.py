"""``pegboard agents list`` and ``pegboard agent run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pegboard.cli import JSON, MODE, current_state, global_options, progress, terminal_host

if TYPE_CHECKING:
    from pegboard import Toolbox

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
    """Every agent type, where it comes from, and those shadowed, broken or not read.

    Exit status: 0 the agent types listed; 2 a usage or configuration error."""
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
@click.option("--json-schema", "schema_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="A JSON Schema (an object's) of the answer wanted: the agent hands it in with "
                   "StructuredOutput, and the answer is printed as JSON.")
@MODE
@JSON
@click.argument("prompt")
def agent_run(prompt: str, agent_type: str | None, session_id: str | None, schema_file: Path | None,
              mode: str | None, as_json: bool) -> None:
    """Run one agent on PROMPT with the configured runner and print its report.

    Its calls are decided like any other; at a terminal, asks go to you.
    With --json-schema, stdout is the agent's validated answer as JSON (its
    report goes to stderr).

    Exit status: 0 the agent finished (with --json-schema: and handed in its answer); 1 the run
    failed, or with --json-schema ended without an answer; 2 a usage or configuration error."""
    import asyncio

    toolbox = current_state().toolbox(host=terminal_host())
    label = " ".join(prompt.split()[:5]) or "task"
    schema = _answer_schema(toolbox, schema_file) if schema_file is not None else None
    answer: list[object] = []

    async def run() -> object:
        from ._children import CHILD_OUTPUT_SCHEMA, PLUGIN, family

        async with toolbox.session(mode, session_id=session_id) as session:
            if schema is not None:
                session.plugin_state(PLUGIN)[CHILD_OUTPUT_SCHEMA] = schema
            with progress(f"Running agent {agent_type or 'general-purpose'}: {label}"):
                result = await session.call("Agent", {"description": label, "prompt": prompt,
                                                      "subagent_type": agent_type, "run_in_background": False})
            answer.extend(child.session.structured_output for child in family(session).live.values()
                          if child.session.structured_output is not None)
            return result

    result = asyncio.run(run())
    from pegboard import ToolResult

    assert isinstance(result, ToolResult)
    if schema is not None:
        if as_json:
            click.echo(json.dumps({"is_error": result.is_error, "text": result.text_content(),
                                   "structured_output": answer[-1] if answer else None}, indent=2))
        else:
            click.echo(result.text_content(), err=True)
            if answer:
                click.echo(json.dumps(answer[-1]))
        if not answer:
            click.echo("pegboard: the agent gave no structured answer: it never called StructuredOutput with "
                       f"one matching {schema_file}", err=True)
        sys.exit(1 if result.is_error or not answer else 0)
    if as_json:
        click.echo(json.dumps({"is_error": result.is_error, "text": result.text_content()}, indent=2))
    else:
        click.echo(result.text_content())
    sys.exit(1 if result.is_error else 0)


def _answer_schema(toolbox: Toolbox, path: Path) -> dict[str, Any]:
    """``--json-schema``'s file read and checked as ``Toolbox.session`` checks an answer schema."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise click.BadParameter(f"{path}: cannot be read: {exc.strerror or exc}",
                                 param_hint="--json-schema") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.BadParameter(f"{path}: is not JSON: {exc}", param_hint="--json-schema") from None
    try:
        checked = toolbox.session(output_schema=schema).output_schema
    except ValueError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--json-schema") from None
    assert checked is not None
    return checked

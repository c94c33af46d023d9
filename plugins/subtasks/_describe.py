"""Which agent types there are (for Agent's description, ``agents list`` and
doctor), read from their folders each time they are asked for."""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

from pegboard import Check, PluginContext

from ._definitions import Broken, Definitions, load_definitions, sources_for

__all__ = ["definitions_for", "describe_agent_tool", "doctor_checks"]

LISTING_DESCRIPTION_CHARS = 300


def plugin_agent_dirs(context: PluginContext) -> tuple[list[tuple[str, Path]], list[Broken]]:
    """Each plugin's ``pegboard_agent_dirs``, one at a time, so a folder is
    credited to its plugin and one that raises hides no other."""
    found: list[tuple[str, Path]] = []
    broken: list[Broken] = []
    for outcome in sorted(context.each("pegboard_agent_dirs"), key=lambda o: o.plugin):
        try:
            if outcome.error is not None:
                raise outcome.error
            found += [(outcome.plugin, Path(folder)) for folder in outcome.value or ()]
        except Exception as exc:  # one plugin's bug must not hide every agent
            broken.append(Broken(None, f"plugin:{outcome.plugin}",
                                 f"pegboard_agent_dirs failed: {type(exc).__name__}: {exc}"))
    return found, broken


def definitions_for(context: PluginContext) -> Definitions:
    dirs, broken = plugin_agent_dirs(context)
    definitions = load_definitions(sources_for(context.config_dir, context.root, context.project_trusted, dirs))
    definitions.broken[:0] = broken
    return definitions


def _tools_of(definition: Any) -> str:
    tools = "all of yours" if definition.tools is None else ", ".join(definition.tools)
    if definition.disallowed:
        tools += f"; never {', '.join(definition.disallowed)}"
    if definition.permission_mode:
        tools += f"; mode {definition.permission_mode}"
    return tools


def describe_agent_tool(context: PluginContext) -> str:
    text = (importlib.resources.files(context.package) / "descriptions" / "Agent.md").read_text(encoding="utf-8")
    definitions = definitions_for(context)
    lines = []
    for definition in definitions:
        description = definition.description
        if len(description) > LISTING_DESCRIPTION_CHARS:
            description = description[: LISTING_DESCRIPTION_CHARS - 1].rstrip() + "…"
        lines.append(f"- {definition.name}: {description} (Tools: {_tools_of(definition)})")
    return f"{text.strip()}\n\nAvailable agent types:\n" + "\n".join(lines)


def doctor_checks(context: PluginContext, max_depth: int) -> list[Check]:
    definitions = definitions_for(context)
    checks = [Check("agents", "ok", f"{len(definitions.agents)} agent type(s), {len(definitions.shadowed)} shadowed"
                                    + ("" if max_depth else "; max_depth = 0, so no sub-agents are offered"))]
    for broken in definitions.broken:
        checks.append(Check("agents", "warn", f"{broken.path or broken.source}: {broken.reason}"))
    for skipped in definitions.skipped:
        checks.append(Check("agents", "warn", f"{skipped.folder}: not read: {skipped.why_not}"))
    for definition in definitions:
        for note in definition.notes:
            checks.append(Check("agents", "warn", f"{definition.path or definition.name}: {note}"))
    return checks

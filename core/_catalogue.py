"""What a model is sent: loaded tools with schemas, deferred tools by name.

Exports the loaded tools as MCP tool definitions and in the tool formats of
the Anthropic Messages API and the OpenAI Chat Completions API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._descriptions import clip_summary

if TYPE_CHECKING:
    from ._session import Session
    from ._tools import Tool

__all__ = ["Catalogue", "CatalogueTool", "build_catalogue", "augmented_schema"]


@dataclass(frozen=True)
class CatalogueTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool


@dataclass(frozen=True)
class DeferredTool:
    name: str
    summary: str
    plugin: str = ""
    group: str | None = None
    """The plugin's group the tool belongs to (an MCP server), if it declared one."""

    @property
    def source(self) -> str:
        return f"{self.plugin} {self.group}" if self.group else self.plugin


DEFAULT_DEFERRED_BUDGET = 8_000


@dataclass(frozen=True)
class Catalogue:
    tools: list[CatalogueTool]
    deferred: list[DeferredTool]
    deferred_budget: int = DEFAULT_DEFERRED_BUDGET
    """The most characters ``deferred_text`` may take (``[tools] deferred_budget``)."""

    def names(self) -> list[str]:
        return [t.name for t in self.tools] + [d.name for d in self.deferred]

    def to_mcp(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema,
                 "annotations": {"readOnlyHint": t.read_only}} for t in self.tools]

    def to_anthropic(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in self.tools]

    def to_openai(self) -> list[dict[str, Any]]:
        return [{"type": "function",
                 "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
                for t in self.tools]

    def deferred_text(self) -> str:
        """The listing of deferred tools for the system prompt, within the
        budget: one line per tool while they fit; past that, one line per
        plugin or group (an MCP server) with its tool count and first names,
        and ToolSearch finds the rest. ``deferred`` still lists every tool."""
        if not self.deferred:
            return ""
        lines = ["Deferred tools (load a schema with ToolSearch, e.g. select:Name; calling one directly also works):"]
        lines += [f"- {d.name}: {d.summary}" for d in self.deferred]
        full = "\n".join(lines)
        if len(full) <= self.deferred_budget:
            return full
        return _grouped_listing(self.deferred, self.deferred_budget)


def _grouped_listing(deferred: list[DeferredTool], budget: int) -> str:
    groups: dict[str, list[str]] = {}
    for d in deferred:
        groups.setdefault(d.source, []).append(d.name)
    head = (f"Deferred tools: {len(deferred):,} from {len(groups)} sources, too many to list one by one. "
            "Find them with ToolSearch (words from what you need, or select:Name to load named tools); "
            "calling one directly also works. By source (tool count, first names):")
    room = budget - len(head) - 1
    shown: list[str] = []
    for index, (source, names) in enumerate(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))):
        rest = len(groups) - index
        tail = f"- … and {rest} more sources ({sum(len(n) for n in list(groups.values())[index:]):,} tools)"
        share = max(60, room // rest) if rest else room
        line = f"- {source} ({len(names)} tools): "
        for name in names:
            piece = name if line.endswith(": ") else f", {name}"
            if len(line) + len(piece) + 2 > share:
                line += ", …" if not line.endswith(": ") else "…"
                break
            line += piece
        if len(line) + 1 + len(tail) + 1 > room:
            shown.append(tail[:max(0, room - 1)])
            break
        shown.append(line)
        room -= len(line) + 1
    return "\n".join([head, *shown])[:budget]


def augmented_schema(session: Session, tool: Tool) -> dict[str, Any]:
    """The tool's schema plus pegboard's ``scratchpad`` (and ``background``
    when enabled), unless the tool has parameters of those names."""
    schema = dict(tool.schema)
    props = dict(schema.get("properties", {}))
    if "scratchpad" not in props:
        extra = " Setting it also lifts this tool's output caps." if tool.lifts_caps_with_scratchpad else ""
        props["scratchpad"] = {
            "type": "string",
            "description": "Save the output in the session scratchpad under this name instead of returning it; "
                           f"you get a short confirmation, and ScratchpadRead reads it back.{extra}",
        }
    if session.toolbox.settings.core.background.enabled and "background" not in props:
        props["background"] = {
            "type": "boolean",
            "description": "Run in the background: you get a task id at once and the result is delivered when "
                           "it finishes; TaskOutput fetches it by the task id.",
        }
    schema["properties"] = props
    schema.setdefault("type", "object")
    return schema


def build_catalogue(session: Session) -> Catalogue:
    toolbox = session.toolbox
    tools, deferred = [], []
    for tool in session.offered():
        description = toolbox.description(tool)
        if tool.name in toolbox.broken:
            continue  # its description failed: left out alone (see Toolbox.tool_problem)
        if tool.loading == "deferred" and tool.name not in session.loaded:
            deferred.append(DeferredTool(tool.name, clip_summary(description), tool.plugin, tool.group))
        elif toolbox.tool_problem(tool) is None:  # a schema that cannot be built leaves that tool out alone
            tools.append(CatalogueTool(tool.name, description, augmented_schema(session, tool), tool.read_only))
    return Catalogue(tools, deferred, toolbox.settings.core.tools.deferred_budget)

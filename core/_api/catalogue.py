"""What a model is sent: loaded tools with schemas, deferred tools by name.

Exports the catalogue as MCP tool definitions and as the tool parameters of
the Anthropic Messages API, OpenAI Chat Completions and the OpenAI Responses
API: optionally in OpenAI's strict mode, and with deferred tools under the
provider's own deferred loading (``defer_loading``) instead of pegboard's
ToolSearch. ``version`` changes whenever what would be sent changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .schemas import strict_schema
from .tools import CORE_PLUGIN

if TYPE_CHECKING:
    from .plugin_session import PluginSession
    from .tools import Tool

__all__ = ["Catalogue", "CatalogueTool", "DeferredTool", "augmented_schema"]

# The providers' own tool search, which stands in for ToolSearch when
# deferred tools are exported with defer_loading.
ANTHROPIC_TOOL_SEARCH = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
RESPONSES_TOOL_SEARCH = {"type": "tool_search"}


@dataclass(frozen=True)
class CatalogueTool:
    """One tool as the model is shown it."""

    name: str
    """The name the model calls it by."""
    description: str
    """Its model-facing description (through ``pegboard_tool_description``)."""
    input_schema: dict[str, Any]
    """The JSON Schema of its arguments, as sent (the core's ``scratchpad`` and background
    arguments added)."""
    read_only: bool
    """It changes nothing (MCP's ``readOnlyHint``)."""
    deferred: bool = False
    """Declared deferred, and loaded in this session (ToolSearch or a call)."""
    plugin: str = ""
    """The plugin that registered it."""
    native: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Its definitions as model APIs' own tool types (``Tool.native``), sent only when the host asks."""


@dataclass(frozen=True)
class DeferredTool:
    """A deferred tool not loaded yet: its name and summary are in the
    listing; its schema is made only for an export that needs it."""

    name: str
    summary: str
    plugin: str = ""
    group: str | None = None
    """The plugin's group the tool belongs to (an MCP server), if it declared one."""
    description: str = ""
    tool: Tool | None = field(default=None, repr=False, compare=False)
    background: bool = field(default=False, repr=False, compare=False)
    session: PluginSession | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> str:
        return f"{self.plugin} {self.group}" if self.group else self.plugin

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        return augmented_schema(self.tool, self.background, self.session) if self.tool is not None else {"type": "object"}


DEFAULT_DEFERRED_BUDGET = 8_000


@dataclass(frozen=True)
class Catalogue:
    """What a session offers the model now (``session.catalogue()``): the
    tools sent whole and the deferred ones, listed by name for ToolSearch;
    ``to_anthropic``, ``to_openai``, ``to_responses`` and ``to_mcp`` give
    them in each API's format (docs/embedding.md)."""

    tools: list[CatalogueTool]
    """The tools sent with their schemas."""
    deferred: list[DeferredTool]
    """Deferred tools not loaded yet: a name and a summary each, in ``deferred_text()``."""
    deferred_budget: int = DEFAULT_DEFERRED_BUDGET
    """The most characters ``deferred_text`` may take (``[tools] deferred_budget``)."""

    def names(self) -> list[str]:
        """Every tool's name, the deferred ones last."""
        return [t.name for t in self.tools] + [d.name for d in self.deferred]

    @cached_property
    def version(self) -> str:
        """A short fingerprint of what this catalogue sends: when a later
        ``session.catalogue().version`` differs (ToolSearch loaded a tool,
        the mode changed, a server's tools changed), send the tools again.
        The session also emits ``catalogue.changed`` then."""
        body = [[t.name, t.description, t.input_schema] for t in self.tools]
        body += [[d.name, d.summary] for d in self.deferred]
        text = json.dumps(body, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_mcp(self) -> list[dict[str, Any]]:
        """MCP ``tools/list`` entries (``name``, ``description``, ``inputSchema``, ``readOnlyHint``)."""
        return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema,
                 "annotations": {"readOnlyHint": t.read_only}} for t in self.tools]

    def _entries(self, defer_loading: bool) -> list[tuple[str, str, dict[str, Any], bool]]:
        """(name, description, schema, defer?) for each tool to export.

        With ``defer_loading``, every declared-deferred tool is exported with
        its schema and flagged, loaded or not, after the others and by name
        (so the list stays the same and the provider's prompt cache holds),
        and pegboard's ToolSearch is left out: the provider's own tool search
        finds them."""
        if not defer_loading:
            return [(t.name, t.description, t.input_schema, False) for t in self.tools]
        out = [(t.name, t.description, t.input_schema, False) for t in self.tools
               if not t.deferred and not (t.name == "ToolSearch" and t.plugin == CORE_PLUGIN)]
        flagged = [(t.name, t.description, t.input_schema, True) for t in self.tools if t.deferred]
        for d in self.deferred:
            try:
                flagged.append((d.name, d.description or d.summary, d.input_schema, True))
            except Exception:  # its input model does not import: that tool is left out alone, as when loaded
                continue
        return out + sorted(flagged, key=lambda entry: entry[0])

    def _searches(self, defer_loading: bool) -> bool:
        return defer_loading and (bool(self.deferred) or any(t.deferred for t in self.tools))

    def _natives(self, provider: str, wanted: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The ``provider`` forms of the tools named in ``wanted`` that this
        catalogue has (a name it lacks is not offered now: skipped)."""
        if isinstance(wanted, str):
            raise TypeError(f"native: give tool names in a collection ({{{wanted!r}}}), not a string")
        names = frozenset(wanted)
        if not names:
            return {}
        declared: dict[str, Mapping[str, Mapping[str, Any]]] = {t.name: t.native for t in self.tools}
        declared.update((d.name, d.tool.native if d.tool is not None else {}) for d in self.deferred)
        out = {}
        for name in names & declared.keys():
            form = declared[name].get(provider)
            if form is None:
                raise ValueError(f"tool {name!r} declares no native {provider} tool type (Tool.native)")
            out[name] = {**form, "name": name}
        return out

    def to_anthropic(self, *, defer_loading: bool = False, native: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Anthropic Messages API tools (``tools=``).

        ``defer_loading=True``: deferred tools come with ``defer_loading``
        and Anthropic's server-side tool search in place of ToolSearch (for
        models that support tool search); no ``deferred_text()`` is needed.

        ``native``: names of tools to send as the Anthropic tool type they
        declare (``Tool.native``; ``native={"memory"}`` sends the memory
        tool as ``memory_20250818``) in place of a function definition: for
        models trained on that type. A name this catalogue lacks is skipped
        (the session is not offered it now); one that declares no Anthropic
        type is a ``ValueError``. The model calls it back under its name,
        with the type's arguments, which ``session.call`` runs as any call."""
        forms = self._natives("anthropic", native)
        out: list[dict[str, Any]] = []
        for name, description, schema, defer in self._entries(defer_loading):
            entry: dict[str, Any] = (dict(forms[name]) if name in forms else
                                     {"name": name, "description": description, "input_schema": schema})
            if defer:
                entry["defer_loading"] = True
            out.append(entry)
        if self._searches(defer_loading):
            out.append(dict(ANTHROPIC_TOOL_SEARCH))
        return out

    def to_openai(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """OpenAI Chat Completions tools (``tools=``). Chat has no deferred
        loading: deferred tools are listed by ``deferred_text()`` and loaded
        with ToolSearch.

        ``strict=True``: each schema that strict mode can express is sent in
        its subset with ``strict: true`` (optional parameters become
        nullable; a null is read as "not given"); a tool whose schema it
        cannot express (an open object) is sent as it is, without strict."""
        out = []
        for name, description, schema, _ in self._entries(False):
            function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
            if strict and (tight := strict_schema(schema)) is not None:
                function.update(parameters=tight, strict=True)
            out.append({"type": "function", "function": function})
        return out

    def to_responses(self, *, strict: bool = False, defer_loading: bool = False) -> list[dict[str, Any]]:
        """OpenAI Responses API function tools (``tools=``), ``strict`` as
        in ``to_openai``. ``defer_loading=True``: deferred tools come with
        ``defer_loading`` and the API's hosted ``tool_search`` in place of
        ToolSearch (for models that support tool search)."""
        out: list[dict[str, Any]] = []
        for name, description, schema, defer in self._entries(defer_loading):
            tight = strict_schema(schema) if strict else None
            entry: dict[str, Any] = {"type": "function", "name": name, "description": description,
                                     "parameters": tight if tight is not None else schema,
                                     "strict": tight is not None}
            if defer:
                entry["defer_loading"] = True
            out.append(entry)
        if self._searches(defer_loading):
            out.append(dict(RESPONSES_TOOL_SEARCH))
        return out

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


def augmented_schema(tool: Tool, background: bool, session: PluginSession | None = None) -> dict[str, Any]:
    """The tool's schema as ``session`` shows it, plus pegboard's ``scratchpad``
    (and ``background`` when enabled), unless the tool has parameters of those names."""
    schema = dict(tool.schema) if tool.session_schema is None else tool.schema_in(session)
    props = dict(schema.get("properties", {}))
    if "scratchpad" not in props:
        extra = " Setting it also lifts this tool's output caps." if tool.lifts_caps_with_scratchpad else ""
        props["scratchpad"] = {
            "type": "string",
            "description": "Save the output in the session scratchpad under this name instead of returning it; "
                           f"you get a short confirmation, and ScratchpadRead reads it back.{extra}",
        }
    if background and "background" not in props:
        props["background"] = {
            "type": "boolean",
            "description": "Run in the background: you get a task id at once and the result is delivered when "
                           "it finishes; TaskOutput fetches it by the task id.",
        }
    schema["properties"] = props
    schema.setdefault("type", "object")
    return schema

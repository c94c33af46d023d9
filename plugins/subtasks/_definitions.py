"""Agent definitions: Markdown with YAML front matter, as Claude Code writes them.

The body is the agent's system prompt; the front matter says what it is for
and how it is narrowed::

    ---
    name: reviewer
    description: Reviews a change for bugs. Use after writing code.
    tools: Read, Grep, Glob, Bash        # exactly these (a list works too)
    disallowedTools: Bash                # never these
    model: haiku                         # a hint for the runner; inherit = the caller's
    permissionMode: plan                 # a mode or level, clamped to the caller's
    maxTurns: 20
    skills: [python-style]               # skills started for it at the beginning
    isolation: worktree                  # a git worktree of its own
    background: true                     # run in the background unless told otherwise
    ---
    You review code ...

Sources, highest precedence first: a trusted project's ``.pegboard/agents/``,
the user's ``<config dir>/agents/``, plugins (``pegboard_agent_dirs``), then
the built-in ones (``general-purpose`` and ``Explore``). A project agent
overrides a user agent of the same name, as in Claude Code; an untrusted
project's folder is not read at all. A name that loses is listed as
shadowed, a file that does not parse as broken; neither stops the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._sources import BUILT_IN_DIR, Source, sources_for

__all__ = ["AgentDefinition", "Broken", "DefinitionError", "Definitions", "Shadowed", "Source", "load_definitions",
           "parse_definition", "sources_for"]

MAX_FILE_BYTES = 256 * 1024
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
KNOWN_KEYS = frozenset({"name", "description", "tools", "disallowedTools", "model", "permissionMode", "maxTurns",
                        "skills", "isolation", "background"})
# Claude Code keys pegboard reads but does not act on: listed, never silently dropped.
NOT_SUPPORTED = {"mcpServers": "MCP servers are configured for the whole toolbox, not per agent",
                 "hooks": "per-agent hooks are not supported; use pegboard_before_call",
                 "memory": "agent memory is not supported"}
# The name the core's own tools are registered under (Tool.plugin), as docs/plugins.md gives it.
CORE_TOOLS_PLUGIN = "core"
_AGENT_TOOL = re.compile(r"^(?:Agent|Task)\((?P<types>[^)]*)\)$")


class DefinitionError(Exception):
    """An agent file that cannot be used; the message says why, for a person."""


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    prompt: str
    source: str
    """"built-in", "user", "project" or "plugin:<name>"."""
    path: Path | None = None
    tools: tuple[str, ...] | None = None
    """Exactly these tools, the core's own among them only when listed (None: every tool the
    caller has)."""
    agent_types: tuple[str, ...] | None = None
    """From ``Agent(a, b)`` in ``tools``: the only types it may start."""
    disallowed: tuple[str, ...] = ()
    model: str | None = None
    permission_mode: str | None = None
    max_turns: int | None = None
    skills: tuple[str, ...] = ()
    isolation: str | None = None
    background: bool | None = None
    notes: tuple[str, ...] = ()
    """What in the file was not applied, for ``agents list``."""
    extra: dict[str, Any] = field(default_factory=dict)

    def core_tools_dropped(self, offered: Iterable[Any]) -> list[str]:
        """The core's own tools (scratchpad, background tasks) among ``offered``
        that ``tools`` does not list: ``tools:`` means exactly those, as in
        Claude Code. ToolSearch stays: it is how a listed deferred tool is
        loaded, and it is offered only while one is."""
        if self.tools is None:
            return []
        return [t.name for t in offered
                if t.plugin == CORE_TOOLS_PLUGIN and t.name not in self.tools and t.name != "ToolSearch"]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "source": self.source,
            "path": str(self.path) if self.path else None, "tools": list(self.tools) if self.tools else None,
            "agent_types": list(self.agent_types) if self.agent_types is not None else None,
            "disallowed_tools": list(self.disallowed), "model": self.model,
            "permission_mode": self.permission_mode, "max_turns": self.max_turns, "skills": list(self.skills),
            "isolation": self.isolation, "background": self.background, "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Broken:
    path: Path | None
    source: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, "source": self.source, "reason": self.reason}


@dataclass(frozen=True)
class Shadowed:
    definition: AgentDefinition
    by: AgentDefinition

    def to_json(self) -> dict[str, Any]:
        return {**self.definition.to_json(), "shadowed_by": {"source": self.by.source,
                                                             "path": str(self.by.path) if self.by.path else None}}


@dataclass
class Definitions:
    """Every agent type found: in effect, shadowed, broken, and folders not read."""

    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    shadowed: list[Shadowed] = field(default_factory=list)
    broken: list[Broken] = field(default_factory=list)
    skipped: list[Source] = field(default_factory=list)

    def get(self, name: str) -> AgentDefinition | None:
        found = self.agents.get(name)
        if found is None:
            # A model writing "explore" for "Explore" made a typo, not a request for another agent.
            folded = [a for n, a in self.agents.items() if n.lower() == name.lower()]
            found = folded[0] if len(folded) == 1 else None
        return found

    def __iter__(self) -> Iterator[AgentDefinition]:
        return iter(self.agents.values())

    def to_json(self) -> dict[str, Any]:
        return {"agents": [a.to_json() for a in self.agents.values()],
                "shadowed": [s.to_json() for s in self.shadowed],
                "broken": [b.to_json() for b in self.broken],
                "not_read": [{"folder": str(s.folder), "source": s.kind, "why": s.why_not} for s in self.skipped]}


def load_definitions(sources: Iterable[Source]) -> Definitions:
    found = Definitions()
    for source in sources:
        if not source.readable:
            if source.folder.is_dir():
                found.skipped.append(source)
            continue
        for item in _scan(source):
            if isinstance(item, Broken):
                found.broken.append(item)
            elif item.name in found.agents:
                found.shadowed.append(Shadowed(item, found.agents[item.name]))
            else:
                found.agents[item.name] = item
    return found


def _scan(source: Source) -> Iterator[AgentDefinition | Broken]:
    folder = source.folder
    if not folder.exists():
        return
    if not folder.is_dir():
        yield Broken(folder, source.kind, "not a directory")
        return
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".md" and not p.name.startswith("."))
    except OSError as exc:
        yield Broken(folder, source.kind, f"cannot list: {exc.strerror or exc}")
        return
    for path in files:
        try:
            info = path.stat()
            key = (str(path), source.kind, info.st_mtime_ns, info.st_size, info.st_ino)
            cached = _parsed.get(key)
            if cached is not None:
                yield cached
                continue
            if info.st_size > MAX_FILE_BYTES:
                raise DefinitionError(f"larger than {MAX_FILE_BYTES // 1024} KiB")
            text = path.read_text(encoding="utf-8")
            found: AgentDefinition | Broken = parse_definition(text, source.kind, path)
        except DefinitionError as exc:
            found = Broken(path, source.kind, str(exc))
        except (OSError, UnicodeDecodeError) as exc:
            yield Broken(path, source.kind, f"cannot read: {exc}")
            continue
        if len(_parsed) > MAX_CACHED:
            _parsed.clear()
        _parsed[key] = found
        yield found


# Parsed files by (path, source, mtime, size, inode): Agent reads its types on
# every call, and parsing YAML costs more than a spawn's other work together.
_parsed: dict[tuple[str, str, int, int, int], AgentDefinition | Broken] = {}
MAX_CACHED = 1000


def parse_definition(text: str, source: str, path: Path | None = None) -> AgentDefinition:
    """One agent file's text; ``DefinitionError`` says what is wrong."""
    raw, body = _split_front_matter(text)
    data = _plain_front_matter(raw)
    if data is None:
        data = _yaml_front_matter(raw)
    if not isinstance(data, dict):
        raise DefinitionError(f"front matter must be a mapping of keys to values, not {type(data).__name__}")
    return _definition({str(k): v for k, v in data.items()}, body, source, path)


def _yaml_front_matter(raw: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise DefinitionError(f"front matter is not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None


# Front matter whose every line is ``key: text`` with text YAML can only read
# as that same string is read without YAML: importing PyYAML costs about a
# quarter of an empty Python's start-up, and the built-in agents (read for
# the Agent tool's description at every start of `pegboard serve`) are all
# written so. Anything else, however harmless, goes to YAML, the reference:
# a line that is not key and text, an empty or quoted value, a value YAML
# would read as a boolean or null (YAML 1.1 words included) or as a number
# or date (those start with a digit, sign or dot, which a letter excludes),
# a comment, ": " inside the text, a repeated, long (YAML stops at 1,024) or
# boolean key, characters that are not printable (YAML breaks lines at some).
_PLAIN_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,63}): ([A-Za-z][^\t]*)")
_YAML_WORDS = frozenset(
    w for word in ("y", "yes", "n", "no", "true", "false", "on", "off", "null")
    for w in (word, word.capitalize(), word.upper()))


def _plain_front_matter(raw: str) -> dict[str, str] | None:
    front: dict[str, str] = {}
    # Split at newlines only: str.splitlines also breaks at characters YAML
    # does not (form feed, vertical tab); any left in a value send it to YAML.
    for line in raw.split("\n"):
        line = line.removesuffix("\r")
        if not line:
            continue
        match = _PLAIN_LINE.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
        if (key in front or key in _YAML_WORDS or value in _YAML_WORDS or value != value.rstrip()
                or ": " in value or " #" in value or value.endswith(":") or not value.isprintable()):
            return None
        front[key] = value
    return front or None


def _definition(front: dict[str, Any], body: str, source: str, path: Path | None) -> AgentDefinition:
    name = _string(front, "name", required=True)
    assert name is not None
    if not NAME_RE.match(name):
        raise DefinitionError(f"name {name!r} is not usable: 1-64 letters, digits, '-', '_' or '.'")
    description = _string(front, "description", required=True)
    assert description is not None
    tools = _names(front, "tools")
    agent_types: tuple[str, ...] | None = None
    if tools is not None:
        kept = []
        for item in tools:
            match = _AGENT_TOOL.match(item)
            if match:
                agent_types = (*(agent_types or ()), *(t.strip() for t in match["types"].split(",") if t.strip()))
                item = "Agent"
            kept.append(item)
        tools = tuple(dict.fromkeys(kept))
    disallowed = _names(front, "disallowedTools") or ()
    mode = _string(front, "permissionMode")
    if mode is not None:
        from pegboard import policy_for

        try:
            policy_for(mode)
        except ValueError as exc:
            raise DefinitionError(f"permissionMode: {exc}") from None
    max_turns = front.get("maxTurns")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
        raise DefinitionError(f"maxTurns must be a positive whole number, not {max_turns!r}")
    isolation = _string(front, "isolation")
    if isolation not in (None, "worktree"):
        raise DefinitionError(f"isolation must be 'worktree', not {isolation!r}")
    background = front.get("background")
    if background is not None and not isinstance(background, bool):
        raise DefinitionError(f"background must be true or false, not {background!r}")
    model = _string(front, "model")
    notes = [f"{key}: not applied ({why})" for key, why in NOT_SUPPORTED.items() if key in front]
    unknown = sorted(k for k in front if k not in KNOWN_KEYS and k not in NOT_SUPPORTED)
    if not body.strip():
        raise DefinitionError("the body (the agent's system prompt) is empty")
    return AgentDefinition(
        name=name, description=" ".join(description.split()), prompt=body.strip(), source=source, path=path,
        tools=tools, agent_types=agent_types, disallowed=tuple(disallowed),
        model=None if model in (None, "inherit") else model, permission_mode=mode, max_turns=max_turns,
        skills=_names(front, "skills") or (), isolation=isolation, background=background, notes=tuple(notes),
        extra={k: front[k] for k in unknown})


def _split_front_matter(text: str) -> tuple[str, str]:
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise DefinitionError("no YAML front matter: the file must start with a '---' line")
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1:])
    raise DefinitionError("front matter is not closed: no second '---' line")


def _string(front: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = front.get(key)
    if value is None:
        if required:
            raise DefinitionError(f"{key} is required")
        return None
    if not isinstance(value, str) or not value.strip():
        raise DefinitionError(f"{key} must be a non-empty string, not {value!r}")
    return value.strip()


def _names(front: dict[str, Any], key: str) -> tuple[str, ...] | None:
    """A comma-separated string (Claude Code's way) or a YAML list; commas
    inside parentheses (``Agent(a, b)``) do not split."""
    value = front.get(key)
    if value is None:
        return None
    items: list[str] = []
    if isinstance(value, str):
        items = _split(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        for entry in value:
            items.extend(_split(entry))
    else:
        raise DefinitionError(f"{key} must be a comma-separated string or a list of strings, not {value!r}")
    return tuple(dict.fromkeys(items))


def _split(text: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")" and depth > 0
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return [item for item in out if item]

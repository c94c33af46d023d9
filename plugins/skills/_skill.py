"""One skill on disk: parsing ``SKILL.md``, rendering it back, substituting arguments.

The format is the one Claude Code and the Agent Skills spec use, so a skill
written for another agent loads unchanged: YAML front matter between ``---``
lines, then Markdown instructions. Only ``name``, ``description`` and
``allowed-tools`` mean something to pegboard; every other key is kept as it
was written (``extra``) so that a skill survives a round trip through
``SkillWrite`` and ``skills list --json`` shows what the author wrote.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import yaml

from pegboard import Rule

# The names SkillWrite may give (the input model's pattern): here, so that reading skills (the
# Skill tool's description, a listing) does not import the input models.
WRITE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

__all__ = [
    "LOAD_NAME_RE",
    "MAX_SKILL_BYTES",
    "WRITE_NAME_RE",
    "Skill",
    "SkillError",
    "SourceKind",
    "parse_allowed_tools",
    "parse_skill_text",
    "read_skill",
    "render_skill_md",
    "split_front_matter",
    "substitute",
]

SourceKind = Literal["user", "project", "plugin"]

SKILL_FILE = "SKILL.md"
# A SKILL.md is instructions for a model; anything this big is a mistake or an
# attack on the context window, and reading it whole would be wasteful.
MAX_SKILL_BYTES = 512 * 1024
MAX_DESCRIPTION = 1024

# Loading is lenient (other agents' names include capitals, dots and
# underscores) but still excludes anything that could be a path or a rule
# specifier delimiter: no "/", no "..", no parentheses, no spaces.
LOAD_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SkillError(Exception):
    """A skill that cannot be loaded; the message says why, for a person."""


@dataclass(frozen=True)
class Skill:
    """A parsed skill. ``base_dir`` is the folder holding ``SKILL.md``."""

    name: str
    description: str
    body: str
    path: Path
    source: SourceKind
    origin: str
    allowed_tools: tuple[str, ...] = ()
    front_matter: Mapping[str, Any] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def extra(self) -> dict[str, Any]:
        """Front-matter keys pegboard does not interpret, as written."""
        return {k: v for k, v in self.front_matter.items() if k not in ("name", "description", "allowed-tools")}

    @property
    def model_invocable(self) -> bool:
        # Claude Code's switch for skills only a person may start; honour it so
        # such a skill is not started by the model here either.
        return self.front_matter.get("disable-model-invocation") is not True

    @property
    def argument_names(self) -> tuple[str, ...]:
        names = self.front_matter.get("arguments")
        if isinstance(names, list) and all(isinstance(n, str) and n.isidentifier() for n in names):
            return tuple(names)
        return ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "origin": self.origin,
            "path": str(self.path),
            "allowed_tools": list(self.allowed_tools),
            "extra": _jsonable(self.extra),
        }


def split_front_matter(text: str) -> tuple[str, str]:
    """``(yaml_text, body)``; ``SkillError`` when there is no front matter.

    The opening ``---`` must be the first line (a BOM and trailing spaces are
    tolerated); the first later line that is exactly ``---`` closes it.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError("no YAML front matter: the file must start with a '---' line")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise SkillError("front matter is not closed: no second '---' line")


def parse_allowed_tools(value: Any) -> tuple[str, ...]:
    """``allowed-tools`` as rule texts.

    Claude Code writes a comma-separated string (``Bash(git:*), Read``), the
    Agent Skills spec a space-separated one, some authors a YAML list. Split on
    commas and whitespace outside parentheses, so ``Bash(git add:*)`` stays one
    rule. Each rule must parse (``Tool`` or ``Tool(specifier)``).
    """
    if value is None:
        return ()
    if isinstance(value, str):
        items = _split_rules(value)
    elif isinstance(value, list):
        items = []
        for item in value:
            if not isinstance(item, str):
                raise SkillError(f"allowed-tools: {item!r} is not a string")
            items.extend(_split_rules(item))
    else:
        raise SkillError(f"allowed-tools must be a string or a list of strings, not {type(value).__name__}")
    for item in items:
        try:
            Rule.parse(item, "allow", "skill")
        except ValueError as exc:
            raise SkillError(f"allowed-tools: {exc}") from None
    return tuple(dict.fromkeys(items))


def _split_rules(text: str) -> list[str]:
    out: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch == "," or ch.isspace()):
            if current:
                out.append("".join(current))
                current = []
            continue
        current.append(ch)
    if depth:
        raise SkillError(f"allowed-tools: unbalanced parentheses in {text!r}")
    if current:
        out.append("".join(current))
    return out


def parse_skill_text(text: str, path: Path, source: SourceKind, origin: str) -> Skill:
    """Parse the text of ``path``; ``SkillError`` says what is wrong."""
    import yaml  # here: listing tools when no skill exists needs no YAML (about 20 ms to import)

    raw_yaml, body = split_front_matter(text)
    try:
        data = yaml.safe_load(raw_yaml) if raw_yaml.strip() else {}
    except yaml.YAMLError as exc:
        raise SkillError(f"front matter is not valid YAML: {_yaml_message(exc)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillError(f"front matter must be a mapping of keys to values, not {type(data).__name__}")
    front: dict[str, Any] = {str(k): v for k, v in data.items()}

    name = front.get("name")
    if name is None:
        # Claude Code falls back to the folder name; so do we.
        name = path.parent.name
    if not isinstance(name, str):
        raise SkillError(f"name must be a string, not {type(name).__name__}")
    name = name.strip()
    if not LOAD_NAME_RE.match(name):
        raise SkillError(
            f"name {name!r} is not usable: 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit")

    description = front.get("description")
    if description is None:
        description = _first_paragraph(body)
        if not description:
            raise SkillError("no description, and the body has no text to take one from")
    if not isinstance(description, str):
        raise SkillError(f"description must be a string, not {type(description).__name__}")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"

    allowed = parse_allowed_tools(front.get("allowed-tools"))
    return Skill(
        name=name,
        description=description,
        body=body.strip("\n"),
        path=path,
        source=source,
        origin=origin,
        allowed_tools=allowed,
        front_matter=front,
    )


def read_skill(path: Path, source: SourceKind, origin: str) -> Skill:
    """Read and parse one ``SKILL.md``."""
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise SkillError(f"SKILL.md is {size} bytes; the limit is {MAX_SKILL_BYTES}")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillError("SKILL.md is not UTF-8 text") from None
    except OSError as exc:
        raise SkillError(f"cannot read SKILL.md: {exc.strerror or exc}") from None
    return parse_skill_text(text, path, source, origin)


def render_skill_md(front: Mapping[str, Any], body: str) -> str:
    """A ``SKILL.md``: front matter in key order, then the body."""
    import yaml

    dumped = yaml.safe_dump(dict(front), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return f"---\n{dumped}---\n\n{body.strip(chr(10))}\n"


# One pass over the body, so that text coming in through the arguments is
# never itself substituted (an argument "$1" stays "$1").
_PLACEHOLDER = re.compile(
    r"\$ARGUMENTS\[(?P<index>\d+)\]"
    r"|\$ARGUMENTS\b"
    r"|\$(?P<pos>\d+)"
    r"|\$\{(?P<var>CLAUDE_SKILL_DIR|PEGBOARD_SKILL_DIR|SKILL_DIR|CLAUDE_SESSION_ID|PEGBOARD_SESSION_ID)\}"
    r"|\$(?P<named>[A-Za-z_][A-Za-z0-9_]*)"
)


def substitute(skill: Skill, args: str, session_id: str = "") -> str:
    """The body with arguments and variables filled in, as Claude Code does.

    ``$ARGUMENTS`` is the whole text; ``$ARGUMENTS[N]`` and ``$N`` are the
    N-th word (0-based, shell quoting respected); ``$<name>`` for names the
    front matter lists under ``arguments``; ``${CLAUDE_SKILL_DIR}`` (and
    ``${PEGBOARD_SKILL_DIR}``) the skill's folder. A positional placeholder
    with no matching word is left as written, so shell snippets such as
    ``awk '{print $1}'`` survive a call without arguments. When ``args`` is
    given and no argument placeholder was used, ``ARGUMENTS: <args>`` is
    appended so the model still sees them.
    """
    try:
        words = shlex.split(args) if args else []
    except ValueError:
        # Unbalanced quotes: fall back to plain words rather than refuse.
        words = args.split()
    named = dict(zip(skill.argument_names, words))
    used = False

    def replace(m: re.Match[str]) -> str:
        nonlocal used
        if m.group("index") is not None or m.group("pos") is not None:
            i = int(m.group("index") or m.group("pos"))
            used = True
            return words[i] if i < len(words) else m.group(0)
        if m.group("var") is not None:
            var = m.group("var")
            if var.endswith("SESSION_ID"):
                return session_id or m.group(0)
            return str(skill.base_dir)
        if m.group("named") is not None:
            key = m.group("named")
            if key in skill.argument_names:
                used = True
                return named.get(key, m.group(0))
            return m.group(0)  # $HOME and friends in the instructions: not ours
        used = True
        return args

    text = _PLACEHOLDER.sub(replace, skill.body)
    if args and not used:
        text = f"{text}\n\nARGUMENTS: {args}"
    return text


def _first_paragraph(body: str) -> str:
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def _yaml_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        # +2: the mark counts from 0 inside the YAML block, which starts on line 2.
        return f"{problem} (line {mark.line + 2}, column {mark.column + 1})"
    return str(problem)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)  # dates and the like, which YAML parses into objects

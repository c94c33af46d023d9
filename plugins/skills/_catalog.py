"""Where skills come from, which one wins a name, and the listing the model sees.

Sources, highest precedence first:

1. ``user``: ``<pegboard config dir>/skills/`` (what the person installed);
2. ``project``: ``<root>/.pegboard/skills/`` (what the repository ships);
3. ``plugin``: folders plugins return from the ``pegboard_skill_dirs`` hook.

The user's own skills win so that a cloned repository cannot replace a skill
the person installed and trusts by shipping one with the same name (the same
order Claude Code uses: personal before project). Each source folder holds one
sub-folder per skill with a ``SKILL.md``. A name that loses is reported as
shadowed, a skill that does not parse as broken; neither stops the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pegboard.paths import is_within, resolve_path

from ._skill import SKILL_FILE, Skill, SkillError, SourceKind, read_skill

__all__ = [
    "PRECEDENCE",
    "Broken",
    "Catalog",
    "Shadowed",
    "Source",
    "default_sources",
    "listing",
    "load_catalog",
    "plugin_skill_dirs",
]

PRECEDENCE: tuple[SourceKind, ...] = ("user", "project", "plugin")
LISTING_ENTRY_LIMIT = 250


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    folder: Path
    origin: str  # "user", "project" or "plugin:<name>"
    within: Path | None = None  # the folder counts only where it resolves inside this one


@dataclass(frozen=True)
class Broken:
    """A skill (or a whole source) that could not be loaded, and why."""

    path: Path | None
    origin: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, "origin": self.origin, "reason": self.reason}


@dataclass(frozen=True)
class Shadowed:
    skill: Skill
    by: Skill

    def to_json(self) -> dict[str, Any]:
        return {**self.skill.to_json(), "shadowed_by": {"origin": self.by.origin, "path": str(self.by.path)}}


@dataclass
class Catalog:
    """Every skill found: the ones in effect, the shadowed, the broken."""

    skills: dict[str, Skill] = field(default_factory=dict)
    shadowed: list[Shadowed] = field(default_factory=list)
    broken: list[Broken] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "precedence": list(PRECEDENCE),
            "skills": [s.to_json() for s in self.skills.values()],
            "shadowed": [s.to_json() for s in self.shadowed],
            "broken": [b.to_json() for b in self.broken],
        }


def default_sources(config_dir: Path, root: Path, plugin_dirs: Iterable[tuple[str, Path]] = (), *,
                    trusted: bool = False) -> list[Source]:
    """The sources in precedence order; the project's only when the project
    is trusted (a checkout's skills are text the model follows, and their
    ``allowed-tools`` would become grants)."""
    sources = [Source("user", config_dir / "skills", "user")]
    if trusted:
        sources.append(Source("project", root / ".pegboard" / "skills", "project", within=root))
    sources += [Source("plugin", Path(folder), f"plugin:{plugin}") for plugin, folder in plugin_dirs]
    return sources


def load_catalog(sources: Iterable[Source]) -> Catalog:
    """Load every source; ``sources`` must be in precedence order."""
    catalog = Catalog()
    for source in sources:
        for item in _scan(source):
            if isinstance(item, Broken):
                catalog.broken.append(item)
                continue
            winner = catalog.skills.get(item.name)
            if winner is None:
                catalog.skills[item.name] = item
            else:
                catalog.shadowed.append(Shadowed(item, winner))
    return catalog


def _scan(source: Source) -> Iterator[Skill | Broken]:
    folder = source.folder
    if not folder.exists():
        return
    if not folder.is_dir():
        yield Broken(folder, source.origin, "not a directory")
        return
    if source.within is not None:
        real = resolve_path(folder, source.within)
        if not is_within(real, resolve_path(source.within, source.within)):
            # .pegboard/skills (or .pegboard) links out of the project: not the project's files.
            yield Broken(folder, source.origin, f"resolves outside the project, to {real}")
            return
    try:
        children = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        yield Broken(folder, source.origin, f"cannot list: {exc.strerror or exc}")
        return
    for child in children:
        # Hidden entries are editor and VCS litter, and SkillDelete's own
        # half-deleted folders while it removes one.
        if child.name.startswith(".") or not child.is_dir():
            continue
        skill_file = child / SKILL_FILE
        if not skill_file.is_file():
            if (child / "skill.md").is_file() or (child / "Skill.md").is_file():
                yield Broken(child, source.origin, "the file must be named SKILL.md (upper case)")
            continue
        try:
            yield read_skill(skill_file, source.kind, source.origin)
        except SkillError as exc:
            yield Broken(skill_file, source.origin, str(exc))


def plugin_skill_dirs(hook: Any) -> tuple[list[tuple[str, Path]], list[Broken]]:
    """Ask every plugin implementing ``pegboard_skill_dirs`` for its folders.

    The implementations are called one by one (not through the hook caller)
    so that each folder is attributed to its plugin and one plugin that raises
    is reported without hiding the others. Sorted by plugin name so the
    winner between two plugins shipping one name does not depend on load order.
    """
    caller = getattr(hook, "pegboard_skill_dirs", None) if hook is not None else None
    if caller is None:
        return [], []
    found: list[tuple[str, Path]] = []
    broken: list[Broken] = []
    for impl in sorted(caller.get_hookimpls(), key=lambda i: i.plugin_name):
        try:
            result = impl.function()
            for folder in result or ():
                found.append((impl.plugin_name, Path(folder)))
        except Exception as exc:  # one plugin's bug must not hide every skill
            broken.append(Broken(None, f"plugin:{impl.plugin_name}",
                                 f"pegboard_skill_dirs failed: {type(exc).__name__}: {exc}"))
    return found, broken


def listing(catalog: Catalog, budget: int) -> str:
    """The skills the model may start, one line each, within ``budget`` characters.

    Entries go in precedence order (user, project, plugin), alphabetical
    within a source, so when the budget runs out it is the plugins' generic
    skills that are left to SkillSearch, not the person's own.
    """
    offered = [s for s in catalog if s.model_invocable]
    if not offered:
        return "No skills are installed."
    rank = {kind: i for i, kind in enumerate(PRECEDENCE)}
    offered.sort(key=lambda s: (rank[s.source], s.name))
    lines: list[str] = []
    used = 0
    for n, skill in enumerate(offered):
        line = f"- {skill.name}: {_clip(skill.description)}"
        after = len(offered) - n - 1
        # Keep room for the closing "N more" note, so the total stays in budget.
        reserve = len(_more(after)) + 1 if after else 0
        if used + len(line) + 1 + reserve > budget:
            lines.append(_more(len(offered) - n))
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _more(count: int) -> str:
    noun = "skill is" if count == 1 else "skills are"
    return f"({count} more {noun} not listed here; SkillSearch finds them.)"


def _clip(text: str) -> str:
    return text if len(text) <= LISTING_ENTRY_LIMIT else text[: LISTING_ENTRY_LIMIT - 1].rstrip() + "…"

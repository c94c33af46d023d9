"""Skill, SkillRead, SkillSearch, SkillWrite and SkillDelete.

The catalogue is read from disk on every call rather than cached: scanning a
few folders is cheap, and a skill the person (or SkillWrite) just added is
then usable at once, in every session.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pegboard import TextContent, ToolContext, ToolResult
from pegboard.paths import config_dir

from ._activation import activate, active, deactivate
from ._catalog import Catalog, default_sources, load_catalog, plugin_skill_dirs
from ._models import SkillDeleteInput, SkillInput, SkillReadInput, SkillSearchInput, SkillWriteInput
from ._search import search, skill_files
from ._skill import (
    SKILL_FILE,
    Skill,
    SkillError,
    SourceKind,
    parse_allowed_tools,
    parse_skill_text,
    render_skill_md,
    substitute,
)
from ._store import atomic_write_text, remove_skill_folder

__all__ = [
    "SkillDeleteInput",
    "SkillInput",
    "SkillReadInput",
    "SkillSearchInput",
    "SkillWriteInput",
    "load_for_session",
    "skill",
    "skill_delete",
    "skill_read",
    "skill_search",
    "skill_write",
    "user_skills_dir",
]

RESERVED_KEYS = ("name", "description", "allowed-tools")
MAX_SHIPPED_LISTED = 50
MAX_READ_BYTES = 256 * 1024


# --- shared ---------------------------------------------------------------------


def user_skills_dir() -> Path:
    return config_dir() / "skills"


def load_for_session(ctx: ToolContext) -> Catalog:
    """All sources for this session's project, plugin folders included."""
    dirs, broken = plugin_skill_dirs(ctx.plugin_context.hook)
    catalog = load_catalog(default_sources(config_dir(), ctx.root, dirs, trusted=ctx.project_trusted))
    catalog.broken[:0] = broken
    return catalog


def _unknown(name: str, catalog: Catalog) -> ToolResult:
    names = [s.name for s in catalog]
    import difflib  # only for an unknown skill's look-alikes

    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    broken = [b for b in catalog.broken if b.path is not None and name in b.path.parts]
    why = f" A skill at {broken[0].path} failed to load: {broken[0].reason}." if broken else ""
    return ToolResult.error(f"No skill is named {name!r}.{hint}{why} SkillSearch finds skills by content.")


def _base_line(skill: Skill) -> str:
    return f"Base directory for this skill: {skill.base_dir}"


def _preapprove(ctx: ToolContext) -> tuple[SourceKind, ...]:
    return tuple(getattr(ctx.config, "preapprove", ("user", "project", "plugin")))


# --- Skill ----------------------------------------------------------------------


async def skill(args: SkillInput, ctx: ToolContext) -> ToolResult:
    name = args.skill.strip().removeprefix("/")
    catalog = load_for_session(ctx)
    found = catalog.get(name)
    if found is None:
        return _unknown(name, catalog)
    if not found.model_invocable:
        return ToolResult.error(
            f"Skill {name!r} sets disable-model-invocation: only a person may start it. "
            "Do not start it yourself; tell the person it exists if it seems relevant.")
    current, previous = activate(ctx.session, ctx.state, found, _preapprove(ctx), ctx.plugin)
    text = f"{_base_line(found)}\n\n{substitute(found, args.args, ctx.session.id)}"
    notes: list[str] = []
    if previous is not None and previous.skill.name != found.name:
        notes.append(f"Skill {previous.skill.name!r} is no longer active; its pre-approvals ended.")
    if current.granted:
        notes.append(f"While {found.name!r} is active these run without asking: {', '.join(current.granted)} "
                     "(deny and ask rules still apply).")
    if current.skipped:
        notes.append(f"Not pre-approved: {'; '.join(current.skipped)}.")
    ctx.emit("skill.activated", {"skill": found.name, "origin": found.origin, "granted": list(current.granted)})
    content = [TextContent(text=text)]
    if notes:
        content.append(TextContent(text="[pegboard] " + " ".join(notes)))
    return ToolResult(content=content)


# --- SkillRead ------------------------------------------------------------------


async def skill_read(args: SkillReadInput, ctx: ToolContext) -> ToolResult:
    catalog = load_for_session(ctx)
    found = catalog.get(args.name.strip().removeprefix("/"))
    if found is None:
        return _unknown(args.name, catalog)
    if args.file is not None:
        return _read_shipped(found, args.file)
    try:
        raw = found.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return ToolResult.error(f"Cannot read {found.path}: {exc}")
    shipped = [p.relative_to(found.base_dir).as_posix() for p in list(skill_files(found))[1:]]
    parts = [_base_line(found), f"Source: {found.origin} ({found.path})"]
    shadows = [s for s in catalog.shadowed if s.by is found]
    for s in shadows:
        parts.append(f"It shadows the {s.skill.origin} skill of the same name at {s.skill.path}.")
    if shipped:
        more = len(shipped) - MAX_SHIPPED_LISTED
        listed = ", ".join(shipped[:MAX_SHIPPED_LISTED]) + (f" and {more} more" if more > 0 else "")
        parts.append(f"Files it ships (read them with SkillRead and file=...): {listed}")
    return ToolResult.text("\n".join(parts) + "\n\n" + raw)


def _read_shipped(found: Skill, relpath: str) -> ToolResult:
    # The skill's folder may sit in the config dir, which file tools treat as
    # protected; reading through SkillRead keeps the skill's own references
    # readable without opening the rest of that folder.
    real_base = Path(os.path.realpath(found.base_dir))
    if os.path.isabs(relpath) or "\x00" in relpath:
        return ToolResult.error("file must be a path relative to the skill's folder.")
    real = Path(os.path.realpath(real_base / relpath))
    if not real.is_relative_to(real_base):
        return ToolResult.error(f"{relpath!r} is outside the skill's folder; only the skill's own files are read.")
    if not real.is_file():
        return ToolResult.error(f"{relpath!r} is not a file in {found.base_dir}.")
    try:
        if real.stat().st_size > MAX_READ_BYTES:
            return ToolResult.error(f"{relpath} is larger than {MAX_READ_BYTES} bytes; SkillRead shows text files only.")
        text = real.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return ToolResult.error(f"{relpath} is not UTF-8 text.")
    except OSError as exc:
        return ToolResult.error(f"Cannot read {real}: {exc.strerror or exc}")
    return ToolResult.text(f"{found.base_dir / relpath}\n\n{text}")


# --- SkillSearch ----------------------------------------------------------------


def skill_search(args: SkillSearchInput, ctx: ToolContext) -> ToolResult:
    # A plain function: the core runs it in a thread, so a slow pattern over
    # many files does not stall the event loop.
    try:
        pattern = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        return ToolResult.error(f"Not a valid regular expression: {exc}. Escape literal characters like '(' or '.'.")
    catalog = load_for_session(ctx)
    matches, more = search(catalog, pattern, args.limit)
    if not matches:
        return ToolResult.text(f"No line of any of the {len(catalog.skills)} skills matches {args.pattern!r}.")
    lines: list[str] = []
    current = ""
    for m in matches:
        if m.skill != current:
            current = m.skill
            found = catalog.get(m.skill)
            desc = found.description if found else ""
            lines.append(f"\n{m.skill} ({found.origin if found else '?'}): {desc}")
        lines.append(m.format())
    if more:
        lines.append(f"\n(More matches exist; narrow the pattern or raise limit above {args.limit}.)")
    return ToolResult.text("\n".join(lines).strip())


# --- SkillWrite -----------------------------------------------------------------


async def skill_write(args: SkillWriteInput, ctx: ToolContext) -> ToolResult:
    root = user_skills_dir()
    catalog = load_for_session(ctx)
    existing = _user_skill(catalog, args.name)
    if args.fields:
        clash = sorted(set(args.fields) & set(RESERVED_KEYS))
        if clash:
            return ToolResult.error(f"fields may not set {', '.join(clash)}; use the parameters of the same name.")
    if existing is None:
        if args.body is None or args.description is None:
            return ToolResult.error(f"No skill {args.name!r} exists in {root}; a new skill needs description and body.")
        front: dict[str, Any] = {"name": args.name, "description": args.description}
        body = args.body
        path = root / args.name / SKILL_FILE
        if path.exists():
            # The folder holds a skill under another name, or one that does not
            # load; overwriting it would destroy something SkillWrite never read.
            return ToolResult.error(f"{path} already exists but is not the skill {args.name!r} "
                                    "(it has another name or does not load; `pegboard skills list` says which). "
                                    "Choose another name.")
    else:
        front = dict(existing.front_matter)
        front["name"] = args.name
        if args.description is not None:
            front["description"] = args.description
        body = existing.body if args.body is None else args.body
        path = existing.path
    if args.allowed_tools is not None:
        try:
            rules = parse_allowed_tools(args.allowed_tools)
        except SkillError as exc:
            return ToolResult.error(f"{exc}. Write rules like 'Read' or 'Bash(git status:*)'.")
        if rules:
            front["allowed-tools"] = ", ".join(rules)
        else:
            front.pop("allowed-tools", None)
    for key, value in (args.fields or {}).items():
        if value is None:
            front.pop(key, None)
        else:
            front[key] = value
    # Put the keys pegboard reads first, as authors usually do.
    ordered = {k: front[k] for k in RESERVED_KEYS if k in front}
    ordered.update({k: v for k, v in front.items() if k not in ordered})
    text = render_skill_md(ordered, body)
    try:
        # Fail closed: never write a file the loader would then reject.
        parse_skill_text(text, path, "user", "user")
    except SkillError as exc:
        return ToolResult.error(f"The skill would not load, so nothing was written: {exc}")
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        return ToolResult.error(f"Could not write {path}: {exc.strerror or exc}")
    notes = [f"{'Updated' if existing else 'Created'} skill {args.name!r} at {path}."]
    current = active(ctx.state)
    if current is not None and current.skill.name == args.name:
        deactivate(ctx.state)
        notes.append("It was active; it is no longer, and its pre-approvals ended. Start it again to use the new text.")
    shadowed = [s for s in catalog if s.name == args.name and s.source != "user"]
    if shadowed:
        notes.append(f"It takes precedence over the {shadowed[0].origin} skill of the same name at {shadowed[0].path}.")
    return ToolResult.text(" ".join(notes))


def _user_skill(catalog: Catalog, name: str) -> Skill | None:
    found = catalog.get(name)
    if found is not None and found.source == "user":
        return found
    return None


# --- SkillDelete ----------------------------------------------------------------


async def skill_delete(args: SkillDeleteInput, ctx: ToolContext) -> ToolResult:
    root = user_skills_dir()
    catalog = load_for_session(ctx)
    found = _user_skill(catalog, args.name)
    if found is None:
        other = catalog.get(args.name) or next((s.skill for s in catalog.shadowed if s.skill.name == args.name), None)
        if other is not None:
            return ToolResult.error(f"{args.name!r} is a {other.origin} skill ({other.path}); SkillDelete removes "
                                    f"only skills in the user's folder {root}.")
        return _unknown(args.name, catalog)
    try:
        remove_skill_folder(found.base_dir, root)
    except (OSError, ValueError) as exc:
        return ToolResult.error(f"Could not delete {found.base_dir}: {exc}")
    notes = [f"Deleted skill {args.name!r} ({found.base_dir})."]
    current = active(ctx.state)
    if current is not None and current.skill.name == args.name:
        deactivate(ctx.state)
        notes.append("It was active; its pre-approvals ended.")
    below = [s.skill for s in catalog.shadowed if s.skill.name == args.name]
    if below:
        notes.append(f"The {below[0].origin} skill of the same name at {below[0].path} is now in effect.")
    return ToolResult.text(" ".join(notes))

"""The fs plugin's permission vote and rule matcher.

Both work on the resolved path (``~``, relative names, ``..`` and symlinks
all followed, also in the parents of a file that does not exist yet), never
on the string the model typed. The handler refuses a path that resolves
differently by the time it runs (``ToolContext.resolved`` hands it what
this decision resolved).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import Vote
from pegboard.paths import is_within

from ._common import HARDLINK_OK
from ._pathrule import PathRule

if TYPE_CHECKING:
    from pegboard import PermissionRequest, Rule

    from ._combine import CombinedFsRules

__all__ = ["COVERS", "PATH_FIELD", "FsRuleMatcher", "raw_path", "vote"]

PATH_FIELD = {
    "Read": "file_path", "Write": "file_path", "Edit": "file_path",
    "NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path",
}
WRITERS = frozenset({"Write", "Edit", "NotebookEdit"})
# Which tools a rule names, as in Claude Code: Edit rules cover every writer,
# Read rules every reader (Glob and Grep read what they search).
COVERS: dict[str, frozenset[str]] = {
    "Read": frozenset({"Read", "Glob", "Grep"}),
    "Edit": WRITERS,
    "Write": frozenset({"Write"}),
    "NotebookEdit": frozenset({"NotebookEdit"}),
    "Glob": frozenset({"Glob"}),
    "Grep": frozenset({"Grep"}),
}


def raw_path(tool: str, args: Any) -> str | None:
    """The path argument as given (``""`` for a Glob/Grep without one: the root)."""
    field = PATH_FIELD.get(tool)
    if field is None:
        return None
    value = args.get(field) if isinstance(args, dict) else getattr(args, field, None)
    if value is None and tool in ("Glob", "Grep"):
        return ""
    return value if isinstance(value, str) else None


def vote(request: PermissionRequest) -> Vote | None:
    name = request.tool.name
    if name not in PATH_FIELD:
        return None
    args = request.input
    raw = raw_path(name, args if type(args) is dict else dict(args))
    if raw is None:
        return Vote.deny(f"{name} needs a path in {PATH_FIELD[name]}")
    try:
        real = request.resolve_str(raw)
    except (ValueError, OSError) as exc:
        return Vote.deny(f"{raw!r} is not a usable path: {exc}")
    write = name in WRITERS
    if not write:
        base = request.path_vote(raw, write=False)
        # the core spills long results there and tells the model to Read them;
        # asked only when the path's own vote does not allow the read already
        # (locating the folder costs more than the rest of the vote)
        if base.decision != "allow" and _is_session_output(real, request):
            return Vote.allow("the session's own saved output")
        return base
    # The stat before the path's vote, which then knows a file holds no git
    # directory without a look of its own (the request remembers it).
    try:
        st = request.lstat(raw)
        unstatable = False
    except OSError:
        st, unstatable = None, True
    base = request.path_vote(raw, write=True)
    state = request.session.plugin_state(request.tool.plugin)
    cleared: set[str] | None = state.get(HARDLINK_OK)
    if cleared is None:
        cleared = state[HARDLINK_OK] = set()
    if cleared:
        cleared.discard(real)
    if unstatable:
        return base
    if st is None or not (stat.S_ISREG(st.st_mode) and st.st_nlink > 1) or base.decision == "deny":
        return base
    # Reaching the handler after this vote means the policy, or a person who was
    # told about the links, cleared it; the handler refuses links it did not see.
    cleared.add(real)
    if request.policy.allows_edits(False):
        return base  # writing anywhere is allowed: another name outside changes nothing
    # firm: a broad allow rule such as Edit(docs/**) must not wave this through unseen
    return Vote.ask(f"{real} has {st.st_nlink} hard links; another of them may be outside the working "
                    f"directories", firm=True)


def _is_session_output(real: str, request: PermissionRequest) -> bool:
    from ._checkpoints import sessions_root

    # computed, not taken from session.data_dir, which would create the folder on every vote
    folder = sessions_root() / request.session.id
    return is_within(Path(real), Path(os.path.realpath(folder)))


class FsRuleMatcher:
    """``Read(./.env)``, ``Edit(docs/**)``: a PathRule applied to the tool's path argument."""

    def __init__(self, rule: Rule, base_dir: Path) -> None:
        self.rule = rule
        self.covers = COVERS[rule.tool]
        assert rule.specifier is not None
        self.path_rule = PathRule(rule.specifier, rule.base_dir or base_dir)

    @classmethod
    def combine(cls, matchers: list[FsRuleMatcher], saved: Any = None) -> CombinedFsRules:
        """All the rules of one behavior and tool as one lookup (the engine's
        optional protocol): the path resolved once, one regular expression
        per anchor. ``ValueError`` when they cannot be combined with
        certainty; the engine then calls ``matches`` one by one.
        ``saved``: what the group's ``save()`` gave in an earlier process
        (the rule cache protocol), used only if every rule resolved to the
        same folder and pattern again."""
        from ._combine import CombinedFsRules

        for matcher in matchers:
            if not isinstance(matcher, FsRuleMatcher) or type(matcher).matches is not FsRuleMatcher.matches:
                raise ValueError(f"{type(matcher).__name__} is not a plain FsRuleMatcher")
        return CombinedFsRules(matchers, saved)

    def fixed_path(self) -> Path | None:
        """The one path this rule names, everything below it included, or
        None: what a sandbox can enforce (see ``PathRule.fixed``)."""
        return self.path_rule.fixed()

    def path_input(self, path: str) -> dict[str, str] | None:
        """The input of a call of the rule's tool on ``path`` (the engine's
        optional protocol: "always allow" previews count the files the rule covers)."""
        field = PATH_FIELD.get(self.rule.tool)
        return {field: path} if field is not None else None

    def matches(self, request: PermissionRequest) -> bool:
        name = request.tool.name
        if name not in self.covers:
            return False
        raw = raw_path(name, dict(request.input))
        try:
            if raw is None:
                raise ValueError("no path")
            real = request.resolve(raw)
        except (ValueError, OSError):
            # an unreadable path may be anything: only an allow rule must not match it
            return self.rule.behavior != "allow"
        if self.path_rule.matches(real):
            return True
        # A deny or ask rule holds in a copy of the folder it was written for
        # (a sub-agent's worktree); an allow rule does not follow it there.
        return self.rule.behavior != "allow" and any(
            self.path_rule.matches(Path(original)) for original in request.session.originals(str(real)))

"""The file tools' deny rules, applied to commands.

``Read(./.env)`` is an operator saying "the model does not read .env"; a
Bash ``cat .env`` must not get round it, nor ``grep -r KEY .``, nor a
script the vote cannot read word by word. Three layers, each for what the
one before cannot see:

* a file a command names (``cat .env``, ``touch docs/x``): the engine's own
  ``Read``/``Write`` deny rules decide (``named_file_vote``);
* a folder a command reads every file below (``grep -r``, ``rg``,
  ``diff -r``): a firm ask while a deny rule may cover files there and the
  box will not hide them (``tree_read_vote``);
* anything else runs in the box, which hides what ``Read`` deny rules name
  and keeps read-only what ``Edit``/``Write`` deny rules name
  (``box_paths``); a rule no mount can follow (a pattern) withholds the
  sandbox's auto-allow instead.

A rule's matcher names its one path through the optional ``fixed_path()``
(the fs plugin's do: ``./.env``, ``secrets/**``, ``~/.aws/**``).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import Vote
from pegboard.paths import is_within, resolve_path

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginSession

    from ._classify import PartVerdict
    from ._sandbox import Backend

__all__ = ["box_paths", "named_file_vote", "reads_tree", "tree_read_vote"]

_FIXED = "shell.deny_fixed_paths"
_READ_BOX = "shell.read_box"
# Programs that read every file below a folder they are given (or the
# current one): always, or with a recursive flag.
_ALWAYS_RECURSIVE = frozenset({"rg", "ag", "ack", "ack-grep"})
_RECURSIVE_WITH_FLAG = frozenset({"grep", "egrep", "fgrep", "zgrep", "diff"})


def named_file_vote(request: PermissionRequest, path: Path, *, write: bool) -> Vote | None:
    """A deny when a ``Read`` (or, for a write, ``Write``/``Edit``) deny
    rule covers ``path``; Write declares Edit's rules as its own."""
    tool, verb = ("Write", "changes") if write else ("Read", "reads")
    hit = request.rule_for("deny", tool, {"file_path": str(path), "content": ""})
    if hit is None:
        return None
    return Vote.deny(f"it {verb} {path}, which {hit.rule.text} denies ({hit.rule.source})")


def reads_tree(argv: tuple[str, ...]) -> str | None:
    """The program in ``argv`` that reads every file below a folder, or
    None. Over-approximates (``grep -er`` counts): a wrong yes asks once
    too often, a wrong no would show a denied file."""
    for i, word in enumerate(argv):
        name = os.path.basename(word)
        if name in _ALWAYS_RECURSIVE:
            return name
        if name == "git" and "grep" in argv[i + 1:]:
            return "git grep"
        if name in _RECURSIVE_WITH_FLAG:
            for arg in argv[i + 1:]:
                if arg in ("--recursive", "--dereference-recursive", "--directories=recurse", "recurse"):
                    return name
                if arg.startswith("-") and not arg.startswith("--") and ("r" in arg or "R" in arg):
                    return name
            return None
    return None


def tree_read_vote(request: PermissionRequest, parts: Iterable[PartVerdict], hidden: frozenset[Path]) -> Vote | None:
    """A firm ask when a part reads every file below a folder and a ``Read``
    deny rule may cover a file there that the box does not hide (``hidden``:
    what it will hide; empty without bubblewrap)."""
    session = request.session
    rules = _fixed_paths(session, session.plugin_state(request.tool.plugin), "Read")
    if not rules:
        return None
    for part in parts:
        program = reads_tree(part.part.argv) if part.reads else None
        if program is None:
            continue
        for folder in part.reads:
            if not os.path.isdir(folder):
                continue
            for text, fixed in rules:
                if fixed is not None and (fixed in hidden or not is_within(fixed, folder)):
                    continue  # hidden in the box, or not below this folder
                why = "it is a pattern, which no sandbox can hide" if fixed is None else "no sandbox hides it"
                return Vote.ask(f"{program} reads every file below {folder}, and {text} may deny some of "
                                f"them ({why})", firm=True)
    return None


def box_paths(session: PluginSession, state: dict[str, Any], backend: Backend,
              writable: tuple[Path, ...]) -> tuple[tuple[Path, ...], tuple[Path, ...], str | None]:
    """What the deny rules on files make of the box: paths ``Read`` rules
    name (hidden), paths ``Edit``/``Write`` rules name that a writable
    folder would expose (kept read-only), and the first rule it cannot
    enforce (None: every one is)."""
    hidden, unenforced = _read_box(session, state, backend, writable)
    guarded: list[Path] = []
    for tool in ("Edit", "Write"):
        for text, path in _with_copies(session, _fixed_paths(session, state, tool)):
            if path is None:
                unenforced = unenforced or text
            elif any(is_within(path, d) or is_within(d, path) for d in writable):
                if backend != "bubblewrap" or not path.exists():
                    # Landlock cannot carve a path out of a writable folder, and
                    # a mount needs something to mount over
                    unenforced = unenforced or text
                guarded.append(path)
    return hidden, tuple(dict.fromkeys(guarded)), unenforced


def _with_copies(session: PluginSession, named: list[tuple[str, Path | None]]) -> list[tuple[str, Path | None]]:
    """``named`` and the same files in the session's copies of their folders
    (a sub-agent's worktree: ``Session.copies_of``)."""
    return named + [(text, Path(copy)) for text, path in named if path is not None
                    for copy in session.copies_of(str(path))]


def _read_box(session: PluginSession, state: dict[str, Any], backend: Backend,
              writable: tuple[Path, ...]) -> tuple[tuple[Path, ...], str | None]:
    """The paths ``Read`` deny rules name (hidden in the box) and the first
    such rule the box cannot enforce. Nothing on disk decides this, only the
    rules, the backend and the writable folders, so it is kept for the
    session until one of them changes: a Bash decision with thousands of
    ``Read`` deny rules does not go through them again."""
    named = _fixed_paths(session, state, "Read")
    kept = state.get(_READ_BOX)
    if isinstance(kept, tuple) and kept[0] is named and kept[1] == backend and kept[2] == writable:
        return kept[3], kept[4]
    hidden: list[Path] = []
    unenforced: str | None = None
    for text, path in _with_copies(session, named):
        if path is None:
            unenforced = unenforced or text
            continue
        if backend != "bubblewrap" and any(is_within(path, d) or is_within(d, path) for d in writable):
            # Landlock hides by granting reads everywhere else: the folder
            # holding it could not read what a command makes there
            unenforced = unenforced or text
        hidden.append(path)
    found = tuple(dict.fromkeys(hidden))
    state[_READ_BOX] = (named, backend, writable, found, unenforced)
    return found, unenforced


def _fixed_paths(session: PluginSession, state: dict[str, Any], tool: str) -> list[tuple[str, Path | None]]:
    """(rule text, the path it names or None) for each deny rule written for
    ``tool``, kept per session until the rules change (they change only by
    being added or revoked)."""
    rules = session.rules_for("deny", tool)
    if not rules:
        return []
    cache: dict[str, tuple[Sequence[Any], list[tuple[str, Path | None]]]] = state.setdefault(_FIXED, {})
    found = cache.get(tool)
    # The same sequence while the rules are unchanged (Session.rules_for), else
    # the rule objects themselves compared by identity (a session with
    # grants gets a new tuple each time; an id could be reused after a revoke).
    if found is not None and found[0] is rules:
        return found[1]
    if found is None or len(found[0]) != len(rules) or not all(map(operator.is_, found[0], rules)):
        found = (rules, [(c.rule.text, _fixed_path(c)) for c in rules])
    cache[tool] = (rules, found[1])
    return found[1]


def _fixed_path(compiled: Any) -> Path | None:
    fixed = getattr(compiled.matcher, "fixed_path", None)
    if not callable(fixed):
        return None
    try:
        path = fixed()
        # resolved as every path the sandbox mounts is (realpath(3): a tenth of os.path.realpath)
        return resolve_path(path, _ROOT) if isinstance(path, (str, Path)) else None
    except Exception:  # a plugin's bug: treat the rule as one no mount can follow
        return None


_ROOT = Path("/")

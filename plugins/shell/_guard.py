"""What the box keeps read-only inside the folders a command may write.

The fs tools ask before writing a protected path (``[permissions]
protected_paths`` and pegboard's own folders: one list, the core's). A command
in the box may write anything in its writable folders, so the box binds every
protected path there read-only over them, at any depth: nested repositories
(``vendor/lib/.git``), a ``.vscode`` in a sub-project, the git directory a
``.git`` file names, and any folder laid out as a git directory whatever
its name (a bare mirror, a ``--separate-git-dir``). A mount point cannot be unlinked or renamed either, so
``rm -rf .git`` and ``mv .git x`` fail as writes into it do.

A mount covers only what exists. A protected name not there yet can be
created, and where it would take effect the box cannot prevent that, so the
command loses the sandbox's auto-allow and asks (``Guard.unguarded`` says
why):

* the home folder inside a writable folder: a missing ``~/.zshrc`` (any
  protected name the home folder lacks) would run at the next shell;
* pegboard's own config and data folders inside a writable folder but not
  there yet (a new ``config.toml`` with allow rules);
* a protected name that is a symbolic link: the link, not its target, is
  what the next reader opens, and it can be replaced.

Each working directory's ``.pegboard`` is created (empty) before a command
runs in the box, so that it is bound read-only like the rest (``prepare``).
What is not guarded: a protected name created where it did not exist, in a
folder below a writable one (``git init sub`` makes a new repository with
hooks of the command's choosing; docs/plugins/shell.md says so). Bash's
result names each one a command created (``_bash._made_unguarded``).

Finding them walks the writable folders. The walk is kept per session: a
folder whose inode, modification and change times are those seen last time
(and not so recent that a change in the same clock tick could hide) is not
listed again, so a later command costs one ``lstat`` per folder.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable
from functools import partial
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard.paths import config_dir, data_dir, is_within, looks_like_git_dir

if TYPE_CHECKING:
    from pegboard import PluginSession

__all__ = ["Guard", "MAX_ENTRIES", "guard", "outermost"]

# Past this many entries in the writable folders the walk stops and the box
# earns no auto-allow (it cannot say what it would have to guard).
MAX_ENTRIES = 400_000
# A folder changed this recently is listed again next time: a change in the
# same clock tick as the listing would leave its times as they were.
_RACY_NS = 2_000_000_000
_STATE = "shell.guard"


@dataclass(frozen=True)
class Guard:
    """``paths``: to bind read-only, inside the writable folders.
    ``unguarded``: why a protected path could still be changed from the box
    (None: nothing known)."""

    paths: tuple[Path, ...] = ()
    unguarded: str | None = None


@dataclass(frozen=True)
class _Listing:
    key: tuple[int, int, int]
    entries: int
    folders: tuple[str, ...]
    protected: tuple[str, ...]
    links: tuple[str, ...]


def guard(session: PluginSession, state: dict[str, Any], writable: Iterable[Path], *, prepare: bool = False) -> Guard:
    """The protected paths in ``writable`` (resolved folders) for ``session``'s
    box. ``prepare``: a command is about to run, so create each working
    directory's missing ``.pegboard`` first (deciding changes nothing)."""
    roots = outermost(writable)
    if not roots:
        return Guard()
    unguarded: list[str] = []
    for root in roots:
        folder = root / ".pegboard"
        if not os.path.lexists(folder):
            if prepare:
                folder.mkdir()
            elif not os.access(root, os.W_OK | os.X_OK):
                unguarded.append(f"{folder} does not exist and cannot be made in advance")
    patterns = session.protected_patterns()
    cache = _cache(session, state, roots, patterns)
    found: list[str] = []
    links: list[str] = []
    entries = 0
    stack = [str(r) for r in roots]
    while stack:
        listing = _list(stack.pop(), cache, partial(session.is_protected, git_dirs=False))
        if listing is None:
            continue
        entries += listing.entries
        if entries > MAX_ENTRIES:
            return Guard(unguarded=f"the writable folders hold more than {MAX_ENTRIES:,} entries, too many to look "
                                   "through for protected paths")
        found.extend(listing.protected)
        links.extend(listing.links)
        stack.extend(listing.folders)
    paths = [Path(p) for p in found]
    paths += _git_dirs(paths, roots)
    unguarded += [f"{link} is a protected name that is a symbolic link, which a command could replace" for link in links]
    unguarded += _missing(session, roots, patterns)
    return Guard(tuple(dict.fromkeys(paths)), unguarded[0] if unguarded else None)


def outermost(folders: Iterable[Path]) -> list[Path]:
    """``folders`` without those inside another (the outer one covers them),
    shallowest first (in their given order within one depth).

    Sorted by their components, a folder's descendants follow it as one run,
    so a folder is covered exactly when it lies within the last one kept: one
    sort, not a check of every pair (a Bash decision asks this of every path
    a ``Read`` deny rule names)."""
    unique = list(dict.fromkeys(folders))
    kept: set[Path] = set()
    last: Path | None = None
    for folder in sorted(unique, key=lambda p: p.parts):
        if last is None or not is_within(folder, last):
            kept.add(folder)
            last = folder
    return [f for f in sorted(unique, key=lambda p: len(p.parts)) if f in kept]


def _cache(session: PluginSession, state: dict[str, Any], roots: list[Path], patterns: tuple[str, ...]) -> dict[str, _Listing]:
    """The session's listings, for these roots and patterns (what is
    protected depends on both: patterns are relative to the working dirs)."""
    key = (tuple(roots), tuple(session.working_dirs), patterns, str(Path.home()))
    kept = state.get(_STATE)
    if not (isinstance(kept, tuple) and kept[0] == key):
        kept = state[_STATE] = (key, {})
    listings: dict[str, _Listing] = kept[1]
    return listings


def _list(folder: str, cache: dict[str, _Listing], is_protected: Callable[[str], bool]) -> _Listing | None:
    try:
        st = os.lstat(folder)
    except OSError:
        return None  # gone: nothing there to guard
    if not stat.S_ISDIR(st.st_mode):
        return None  # replaced by a link or a file since it was listed
    key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    kept = cache.get(folder)
    if kept is not None and kept.key == key:
        return kept
    folders: list[str] = []
    protected: list[str] = []
    links: list[str] = []
    names: list[str] = []
    entries = 0
    try:
        with os.scandir(folder) as it:
            for entry in it:
                entries += 1
                names.append(entry.name)
                path = entry.path
                if is_protected(path):
                    (links if entry.is_symlink() else protected).append(path)
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(path)
    except OSError:
        if os.access(folder, os.W_OK | os.X_OK):
            # We cannot list it but could create names in it: not known to be safe.
            links.append(folder)
        return _Listing(key, entries, (), (), tuple(links))
    if looks_like_git_dir(names):
        # A git directory under another name (a bare mirror, a separate git
        # dir): read-only as a whole, as .git is. Decided from its own
        # listing, so a HEAD added later changes this folder's times and is seen.
        folders, protected = [], [folder]
    listing = _Listing(key, entries, tuple(folders), tuple(protected), tuple(links))
    if time.time_ns() - st.st_ctime_ns > _RACY_NS:
        cache[folder] = listing
    return listing


def _git_dirs(found: list[Path], roots: list[Path]) -> list[Path]:
    """The git directory (and common directory) a ``.git`` file names, where
    it lies in a writable folder under another name (a worktree's or a
    submodule's)."""
    out: list[Path] = []
    for path in found:
        if path.name != ".git" or not path.is_file():
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if not text.startswith("gitdir:"):
            continue
        gitdir = Path(os.path.realpath(path.parent / text[len("gitdir:"):].strip()))
        candidates = [gitdir]
        try:
            common = (gitdir / "commondir").read_text(errors="replace").strip()
            candidates.append(Path(os.path.realpath(gitdir / common)))
        except OSError:
            pass
        out += [c for c in candidates if c.is_dir() and any(is_within(c, r) for r in roots)]
    return out


def _missing(session: PluginSession, roots: list[Path], patterns: tuple[str, ...]) -> list[str]:
    """Protected names that do not exist where they would take effect, in a
    writable folder: the home folder's, and pegboard's own folders."""
    out: list[str] = []
    home = Path(os.path.realpath(Path.home()))
    if any(is_within(home, r) for r in roots):
        for name in _literal_names(patterns):
            place = home / name
            if not os.path.lexists(place) and session.is_protected(str(place)):
                out.append(f"{place} does not exist, and the box cannot keep a command from creating it (the "
                           "home folder is writable)")
    for own in (config_dir(), data_dir()):
        place = Path(os.path.realpath(own))
        if not os.path.lexists(place) and any(is_within(place, r) for r in roots):
            out.append(f"pegboard's folder {place} does not exist, and the box cannot keep a command from "
                       "creating it")
    return out


def _literal_names(patterns: Iterable[str]) -> list[str]:
    """The paths protected patterns name literally (``.zshrc``,
    ``.config/fish`` for ``.config/fish/**``): what a missing file could be."""
    out: list[str] = []
    for pattern in patterns:
        text = pattern.strip()
        if not text or text.startswith(("!", "#")):
            continue
        text = text.removesuffix("/**").strip("/")
        if text and not any(c in text for c in "*?[\\") and text not in (".", ".."):
            out.append(text)
    return list(dict.fromkeys(out))

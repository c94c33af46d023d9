"""Git directories under any name: a bare mirror (``clone --mirror``), a
``--separate-git-dir``, a linked worktree's folder. Their ``config`` and
``hooks/`` run code at the next git command as ``.git``'s do, but no name
says so, so the name-based protected paths miss them: what git itself takes
for a git directory is looked for (setup.c's ``is_git_directory``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection

__all__ = ["enclosing_git_dir", "is_git_dir", "looks_like_git_dir"]


def looks_like_git_dir(names: Collection[str]) -> bool:
    """Whether a folder holding ``names`` is laid out as a git directory:
    a ``HEAD``, and ``objects`` and ``refs`` or a ``commondir`` naming the
    folder that has them (a linked worktree's). Over-approximates (the
    entries' kinds are not checked): a wrong yes protects a folder, a
    wrong no would leave hooks writable."""
    return "HEAD" in names and ("commondir" in names or ("objects" in names and "refs" in names))


def is_git_dir(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` (resolved) is a git directory, whatever its name."""
    base = os.fspath(folder).rstrip("/") + "/"
    try:
        head = os.lstat(base + "HEAD")  # the one look most folders need
    except OSError:
        return False
    if not (stat.S_ISREG(head.st_mode) or stat.S_ISLNK(head.st_mode)):
        return False
    if os.path.lexists(base + "commondir"):
        return True
    return os.path.isdir(base + "objects") and os.path.isdir(base + "refs")


# Whether anything, a dangling link included, is at a path, without raising:
# every write's decision asks it once per folder it walks, nearly always to
# hear no, and the exception a failed lstat raises cost more than the system
# call (about 40% of the walk's instructions).
_ACCESS_NOFOLLOW = os.access in os.supports_follow_symlinks


def _something_at(path: str) -> bool:
    if _ACCESS_NOFOLLOW:
        return os.access(path, os.F_OK, follow_symlinks=False)
    return os.path.lexists(path)  # pragma: no cover - every platform pegboard runs on has faccessat


def enclosing_git_dir(path: str, stop: str = "/", *, absent: int = 0) -> str | None:
    """The git directory ``path`` (resolved) is or lies in, nearest first; None
    when none of its folders up to ``stop`` (a folder above it: the working
    directory it lies in) is one. One look per folder, none in the last
    ``absent`` names of ``path``: the caller found nothing there (resolving
    the path did), and a folder that is not there holds no ``HEAD``."""
    folder = path.rstrip("/") or "/"  # a file's "HEAD" look fails as cheaply as an isdir would
    stop = stop.rstrip("/") or "/"
    # String cuts rather than os.path.dirname, and the look inlined: every
    # write's decision walks here, and the Python around each system call
    # cost as much as the call.
    while absent > 0:  # (no range(): this runs at every write's decision)
        if folder == stop or folder == "/":
            return None  # everything up to ``stop`` is missing
        folder = folder.rpartition("/")[0] or "/"
        absent -= 1
    if not _ACCESS_NOFOLLOW:  # pragma: no cover - every platform pegboard runs on has faccessat
        look = _something_at
    while True:
        if _ACCESS_NOFOLLOW:
            found = os.access(folder + "/HEAD" if folder != "/" else "/HEAD", os.F_OK, follow_symlinks=False)
        else:  # pragma: no cover
            found = look(folder + "/HEAD" if folder != "/" else "/HEAD")
        if found and is_git_dir(folder):
            return folder
        if folder == stop or folder == "/":
            return None
        folder = folder.rpartition("/")[0] or "/"

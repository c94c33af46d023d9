"""Path facts the permission engine and plugins share: resolve, contain, name."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path

__all__ = ["is_within", "relative_posix", "resolve_path", "resolve_text", "rule_path"]


def resolve_path(path: str | os.PathLike[str], root: Path) -> Path:
    """The real path: ``~`` expanded, relative to ``root``, symlinks followed
    (also in the parents of a path that does not exist yet).

    ``ValueError`` for a NUL byte, which no real path contains.
    """
    return Path(resolve_text(path, root)[0])


def resolve_text(path: str | os.PathLike[str], root: Path | str) -> tuple[str, bool]:
    """``resolve_path`` as a string, without building a ``Path`` (the
    permission engine resolves a path for every decision), and whether
    nothing at all, not even a dangling symlink, was at the real path as
    it was resolved (a vote need not look there again)."""
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError("path contains a NUL byte")
    # Plain strings rather than Path arithmetic: this runs for every decision.
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if not os.path.isabs(text):
        text = os.path.join(os.fspath(root), text)
    return _resolve(text)


# The C library's realpath(3) gives the same answer as os.path.realpath for a
# path that exists, in a third to a half of the time (one call instead of a
# Python loop over components); every permission decision resolves at least
# one path. Whatever it cannot resolve (a missing file, a loop, another
# platform) goes to os.path.realpath, which is the reference.
_libc_realpath = None
if sys.platform.startswith(("linux", "darwin")):
    try:
        _libc_realpath = ctypes.CDLL(None, use_errno=True).realpath
        _libc_realpath.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        _libc_realpath.restype = ctypes.c_char_p
    except (OSError, AttributeError):
        _libc_realpath = None
# Whether anything is at a path, asked without following a final symlink and
# without raising: an exception costs more than the system call.
_CAN_PROBE = os.access in os.supports_follow_symlinks
_buffers = threading.local()


def _call_libc(path: str, buf: ctypes.Array[ctypes.c_char]) -> bytes | None:
    try:
        return _libc_realpath(os.fsencode(path), buf)  # type: ignore[misc, no-any-return]
    except (ValueError, OSError):
        return None


def _exists(path: str) -> bool:
    if _CAN_PROBE:
        return os.access(path, os.F_OK, follow_symlinks=False)
    try:
        os.lstat(path)
    except (OSError, ValueError):
        return False
    return True


def _reference(path: str) -> tuple[str, bool]:
    real = os.path.realpath(path)
    return real, not os.path.lexists(real)


def _realpath(path: str) -> str:
    """``os.path.realpath(path)`` for an absolute path, faster."""
    return _resolve(path)[0]


def _resolve(path: str) -> tuple[str, bool]:
    """``os.path.realpath(path)`` for an absolute path, and whether nothing
    is there (see ``resolve_text``)."""
    if _libc_realpath is None:
        return _reference(path)
    buf = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = ctypes.create_string_buffer(max(os.pathconf("/", "PC_PATH_MAX"), 4096) + 1)
    # A file about to be written usually does not exist yet (nor, sometimes,
    # its folder), and realpath(3) fails on it only after walking the whole
    # path: look first. When nothing at all is at ``path`` and its missing
    # ancestors (not even a dangling symlink, which must be followed to
    # where a write would land), the nearest ancestor realpath(3) resolves
    # plus the missing names is the answer: os.path.realpath, too, joins the
    # names it cannot look up. Anything else realpath(3) cannot resolve (a
    # dangling link, "..", a loop) goes to the reference.
    if _exists(path):
        found = _call_libc(path, buf)
        if found is None:
            return _reference(path)
        return os.fsdecode(found), False
    missing: list[str] = []
    current = path
    while True:
        head, tail = os.path.split(current)
        if not tail or tail in (".", "..") or head == current:
            return _reference(path)
        missing.append(tail)
        current = head
        found = _call_libc(current, buf)
        if found is not None:
            folder = os.fsdecode(found)
            if len(missing) == 1:  # a new file in an existing folder: the usual case
                return (folder + "/" if folder != "/" else "/") + tail, True
            return os.path.join(folder, *reversed(missing)), True
        if _exists(current):
            return _reference(path)


def is_within(path: Path, directory: Path) -> bool:
    """Component-wise containment: /srv/app2 is not within /srv/app.

    Lexical, like ``Path.relative_to`` (give resolved paths), but on strings:
    the permission engine asks this for every rule base and working dir of
    every call, and pathlib's parsing was most of a decision's cost.
    """
    p, d = str(path), str(directory)
    if p == d:
        return True
    if not d.endswith("/"):
        d += "/"
    return p.startswith(d)


def relative_posix(path: Path, directory: Path) -> str | None:
    """``path`` relative to ``directory`` as a POSIX string ("." for the
    directory itself), or None when it is not within; lexical, on strings."""
    p, d = str(path), str(directory)
    if p == d:
        return "."
    if not d.endswith("/"):
        d += "/"
    return p[len(d):] if p.startswith(d) else None


def rule_path(path: Path) -> str:
    """A path as a permission rule writes it: ``//abs/path`` for absolute."""
    return "/" + path.as_posix()

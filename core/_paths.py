"""Path facts the permission engine and plugins share: resolve, contain, name."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path

__all__ = ["is_within", "relative_posix", "resolve_path", "rule_path"]


def resolve_path(path: str | os.PathLike[str], root: Path) -> Path:
    """The real path: ``~`` expanded, relative to ``root``, symlinks followed
    (also in the parents of a path that does not exist yet).

    ``ValueError`` for a NUL byte, which no real path contains.
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError("path contains a NUL byte")
    # Plain strings rather than Path arithmetic: this runs for every decision.
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if not os.path.isabs(text):
        text = os.path.join(os.fspath(root), text)
    return Path(_realpath(text))


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
_buffers = threading.local()


def _call_libc(path: str, buf: ctypes.Array[ctypes.c_char]) -> bytes | None:
    try:
        return _libc_realpath(os.fsencode(path), buf)  # type: ignore[misc, no-any-return]
    except (ValueError, OSError):
        return None


def _realpath(path: str) -> str:
    """``os.path.realpath(path)`` for an absolute path, faster."""
    if _libc_realpath is None:
        return os.path.realpath(path)
    buf = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = ctypes.create_string_buffer(max(os.pathconf("/", "PC_PATH_MAX"), 4096) + 1)
    # A file about to be written usually does not exist yet (nor, sometimes,
    # its folder), and realpath(3) fails on it only after walking the whole
    # path: look first. When nothing at all is at ``path`` and its missing
    # ancestors (not even a dangling symlink, which must be followed to
    # where a write would land), the nearest existing ancestor resolved plus
    # the missing names is the answer. Anything else realpath(3) cannot
    # resolve (a dangling link, "..", a loop, a file where a folder should
    # be) goes to the reference.
    missing: list[str] = []
    current = path
    known_present = False
    while True:
        if not known_present:
            try:
                os.lstat(current)
            except FileNotFoundError:
                head, tail = os.path.split(current)
                if not tail or tail in (".", "..") or head == current:
                    return os.path.realpath(path)
                missing.append(tail)
                current = head
                # The usual case, a new file in an existing folder: resolve
                # the folder straight away, one lstat fewer.
                found = _call_libc(current, buf)
                if found is not None:
                    break
                continue
            except (OSError, ValueError):
                return os.path.realpath(path)
            known_present = True
        found = _call_libc(current, buf)
        if found is None:
            return os.path.realpath(path)
        break
    return os.path.join(os.fsdecode(found), *reversed(missing)) if missing else os.fsdecode(found)


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

"""Path facts the permission engine and plugins share: resolve, contain, name."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["gitignore_form", "is_within", "relative_posix", "resolve_counted", "resolve_path", "resolve_text",
           "rule_path"]


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
    real, missing = resolve_counted(path, root)
    return real, missing > 0


def resolve_counted(path: str | os.PathLike[str], root: Path | str) -> tuple[str, int]:
    """``resolve_text``, saying how many of the real path's last names were
    found missing (0: something is there; when not, 1 or more, a lower bound:
    the one-call route below does not count them): the permission engine need
    not look for a git directory in folders resolving found absent."""
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError("path contains a NUL byte")
    # Plain strings rather than Path arithmetic: this runs for every decision.
    if text.startswith("~"):
        text = os.path.expanduser(text)
    if not text.startswith(os.sep) and not os.path.isabs(text):
        text = os.path.join(os.fspath(root), text)
    return _resolve_counted(text)


# The C library's realpath(3) gives the same answer as os.path.realpath for a
# path that exists, in a third to a half of the time (one call instead of a
# Python loop over components); every permission decision resolves at least
# one path. Whether anything is at a path is asked with access(2), which
# neither follows a final symlink nor raises (an exception costs more than
# the system call); it looks as the real user, which is the effective one
# since pegboard never runs set-uid. Whatever this cannot settle (a dangling
# link, "..", a loop, another platform) goes to os.path.realpath, the reference.
_libc_realpath = None
if sys.platform.startswith(("linux", "darwin")) and os.access in os.supports_follow_symlinks:
    try:
        _libc_realpath = ctypes.CDLL(None, use_errno=True).realpath
        # no argtypes: converting them costs a tenth of the call; _libc passes
        # only bytes and its own buffer, which ctypes hands over as char *
        _libc_realpath.restype = ctypes.c_char_p
    except (OSError, AttributeError):
        _libc_realpath = None
_ENCODING, _ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
_buffers = threading.local()


def _libc(path: str) -> str | None:
    buf = getattr(_buffers, "buf", None)
    if buf is None:
        buf = _buffers.buf = ctypes.create_string_buffer(max(os.pathconf("/", "PC_PATH_MAX"), 4096) + 1)
    try:
        found = _libc_realpath(path.encode(_ENCODING, _ERRORS), buf)  # type: ignore[misc]
    except (ValueError, OSError, UnicodeError):
        return None
    return None if found is None else found.decode(_ENCODING, _ERRORS)


def _reference(path: str) -> tuple[str, bool]:
    real = os.path.realpath(path)
    return real, not os.path.lexists(real)


def _resolve(path: str) -> tuple[str, bool]:
    """``os.path.realpath(path)`` for an absolute path, and whether nothing
    is there (see ``resolve_text``)."""
    real, missing = _resolve_counted(path)
    return real, missing > 0


def _reference_counted(path: str) -> tuple[str, int]:
    real, missing = _reference(path)
    return real, int(missing)  # how many names were missing is not known here: the last one at least


def _resolve_counted(path: str) -> tuple[str, int]:
    """``os.path.realpath(path)`` for an absolute path, and how many of its
    last names are missing (see ``resolve_counted``)."""
    if _openat2 and (clean := _symlink_free(path)) is not None:
        return clean
    if _libc_realpath is None:
        return _reference_counted(path)
    if os.access(path, os.F_OK, follow_symlinks=False):
        found = _libc(path)
        return (found, 0) if found is not None else _reference_counted(path)
    # Nothing at ``path``: a file about to be written, maybe in a folder
    # about to be made. Up to the nearest ancestor that exists, each name
    # is missing (not even a dangling symlink, which a write would follow),
    # so the answer is that ancestor resolved plus the missing names:
    # os.path.realpath, too, joins the names it cannot look up. Looking
    # before resolving spares a realpath(3) that fails only after walking
    # the whole path.
    missing: list[str] = []
    current = path
    while True:
        cut = current.rfind("/")
        tail = current[cut + 1:]
        if not tail or tail == "." or tail == ".." or cut < 0:
            return _reference_counted(path)
        missing.append(tail)
        current = current[:cut].rstrip("/") or "/"
        if os.access(current, os.F_OK, follow_symlinks=False):
            break
    folder = _libc(current)
    if folder is None:
        return _reference_counted(path)
    if folder != "/":
        folder += "/"
    return folder + ("/".join(reversed(missing)) if len(missing) > 1 else tail), len(missing)


# openat2(2) with RESOLVE_NO_SYMLINKS (Linux 5.6) reaches a path only if no
# name in it is a symlink: then a clean path (no "//", ".", "..", trailing
# "/") is its own real path. One call (and a close) in place of realpath(3),
# which reads every name's link, one system call each: the usual path has no
# symlink, and a decision resolves one at least. Any other answer (a symlink
# on the way, a file where a folder should be, no openat2 here, valgrind)
# goes the general way below.
_SYS_OPENAT2 = 437  # the same number on every Linux architecture
_openat2: list[Any] = []  # [syscall, its number, AT_FDCWD, struct open_how, its size] once loaded


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> None:
    if not sys.platform.startswith("linux") or not hasattr(os, "O_PATH"):
        return
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return
    syscall.restype = ctypes.c_long
    how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, 0x04)  # RESOLVE_NO_SYMLINKS
    # typed once: syscall(2) is variadic, and the kernel reads the last argument as a size_t
    _openat2[:] = [syscall, ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(-100), ctypes.byref(how),
                   ctypes.c_size_t(ctypes.sizeof(_OpenHow)), how]


_load_openat2()


def _symlink_free(path: str) -> tuple[str, int] | None:
    """``_resolve_counted`` for a clean absolute ``path`` in which no name is
    a symlink: the path itself, and 0 when something is there, 1 when a name
    of it is missing (the folders above that name reached with no symlink
    followed); None for anything else (the caller resolves it the general way)."""
    if (not path.startswith("/") or "//" in path or "/./" in path or "/../" in path
            or path.endswith(("/", "/.", "/..")) or "\x00" in path):
        return None
    try:
        encoded = path.encode(_ENCODING, _ERRORS)
    except UnicodeError:
        return None
    syscall, number, at_cwd, how, size, _ = _openat2
    fd = syscall(number, at_cwd, encoded, how, size)
    if fd >= 0:
        os.close(fd)
        return path, 0
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        # The walk stopped at a missing name, every name before it a folder
        # and no symlink (a symlink, dangling or not, is ELOOP): the path is
        # its own real path, and nothing is at it. Which name was missing is
        # not looked for: trying each folder up in turn cost an openat2
        # apiece and a close, more than the git HEAD looks it would spare
        # the vote in the folders found missing (one faccessat each).
        return path, 1
    if err in (errno.ENOSYS, errno.EPERM):  # an older kernel, a seccomp filter (or valgrind)
        _openat2.clear()
    return None  # a symlink (ELOOP), a file as a folder, no access...: the general way


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


def gitignore_form(text: str) -> str:
    """A path or pattern as gitignore matching must see it.

    pathspec translates ``**`` to ``.*``, and ``.`` stops at a newline: a
    deny rule ``Read(**/.env)`` would miss ``a<newline>b/.env``, a folder
    anyone can make. A newline becomes NUL, which no path and no rule holds,
    in patterns and paths alike.
    """
    return text.replace("\n", "\x00")

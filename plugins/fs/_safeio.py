"""Opening and writing exactly the file that was checked.

The permission decision is made on a resolved path (no ``..``, no symlinks).
Between that decision and the open, another process could swap a component
for a symlink pointing elsewhere. So every open here walks the resolved path
one component at a time, relative to the previous directory's fd, with
``O_NOFOLLOW``: a component that has become a symlink makes the open fail
(ELOOP/ENOTDIR) instead of being followed. Writes are the core's one
helper, ``pegboard.paths.atomic_write``, which works the same way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any

from pegboard.paths import MultiplyLinked, NotRegular, PathChanged, atomic_write, open_dir, walk_error

__all__ = [
    "PathChanged",
    "MultiplyLinked",
    "NotRegular",
    "atomic_write",
    "make_folders",
    "open_dir",
    "open_dir_readable",
    "open_read",
    "open_read_stat",
    "read_nonblocking",
    "stat_nofollow",
]



# openat2(2) with RESOLVE_NO_SYMLINKS (Linux 5.6) refuses a symlink in any
# component, the last included, in one system call: the same guarantee as the
# walk below, which costs an open and a close per component (most of a small
# Read's own time). Where the kernel or a seccomp filter lacks it, the walk.
_SYS_OPENAT2 = 437  # the same number on every Linux architecture
_RESOLVE_NO_SYMLINKS = 0x04
_AT_FDCWD = -100
_openat2_state: list[Any] = []  # [] untried, [None] unavailable, [(syscall, how type)] ready


def _openat2_no_symlinks(path: str, flags: int) -> int | None:
    """An fd for the absolute ``path`` opened with no symlink followed; None
    when openat2 is not available here (the caller walks instead)."""
    if not _openat2_state:
        _openat2_state.append(_load_openat2())
    ready = _openat2_state[0]
    if ready is None:
        return None
    syscall, number, dirfd, hows, size = ready
    how = hows.get(flags)
    if how is None:
        how = hows[flags] = ctypes.byref(_OpenHow(flags, 0, _RESOLVE_NO_SYMLINKS))
    # The arguments are made once (only the kernel reads them): making them
    # per call cost half of this function.
    fd = syscall(number, dirfd, path.encode(_ENCODING, _ERRORS), how, size)
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err == errno.ENOSYS:  # an older kernel
        _openat2_state[0] = None
        return None
    if err in (errno.EPERM, errno.E2BIG, errno.EINVAL):  # a seccomp filter, or a flag it cannot take: walk
        return None
    raise OSError(err, os.strerror(err), path)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_ENCODING, _ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # os.fsencode's


def _load_openat2() -> tuple[Any, ...] | None:
    """syscall(2) and its fixed arguments: the call's number, AT_FDCWD,
    struct open_how by open flags, and its size."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    # Typed arguments: syscall(2) is variadic, and the kernel reads the last one as a size_t.
    return (syscall, ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(_AT_FDCWD), {},
            ctypes.c_size_t(ctypes.sizeof(_OpenHow)))


def open_dir_readable(real_dir: Path) -> int:
    """Like ``open_dir``, but an fd that can be listed (os.scandir) and read from."""
    fd = open_dir(real_dir)
    try:
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def make_folders(real_dir: Path) -> list[Path]:
    """Create the folders of the resolved path ``real_dir`` that are missing,
    each by ``mkdir`` relative to its parent's fd, following no symlink (a
    component that became one makes it fail with ``PathChanged``); a folder
    made meanwhile by someone else is used as it is. The folders made,
    outermost first."""
    missing: list[str] = []
    existing = real_dir
    while not os.path.lexists(existing) and existing != existing.parent:
        missing.append(existing.name)
        existing = existing.parent
    dfd = open_dir(existing)
    made: list[Path] = []
    try:
        for name in reversed(missing):
            try:
                os.mkdir(name, 0o777, dir_fd=dfd)  # the umask applies, as mkdir -p's
                made.append(existing / name)
            except FileExistsError:
                pass  # made meanwhile: opened below as a folder, not followed as a link
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            except OSError as exc:
                raise PathChanged(errno.ELOOP, f"{existing / name} is not a folder (it changed while the "
                                               f"missing folders were made): {exc.strerror}") from None
            os.close(dfd)
            dfd, existing = fd, existing / name
    finally:
        os.close(dfd)
    return made


def stat_nofollow(real: Path) -> os.stat_result | None:
    """lstat of ``real`` reached through ``open_dir``; None when it does not exist."""
    dfd = open_dir(real.parent)
    try:
        return os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(dfd)


def open_read(real: str | os.PathLike[str]) -> int:
    """A read-only fd on the regular file ``real``; raises PathChanged/NotRegular/OSError."""
    return open_read_stat(real)[0]


def open_read_stat(real: str | os.PathLike[str], *, keep_nonblocking: bool = False) -> tuple[int, os.stat_result]:
    """``open_read``, with the ``fstat`` of the fd it checked the file by
    (a handler needs no stat of its own). ``NotRegular`` has errno EISDIR
    for a directory. ``keep_nonblocking``: the fd keeps the ``O_NONBLOCK``
    it was opened with (clearing it costs two system calls), for a caller
    that reads it at once with ``read_nonblocking``."""
    # O_NONBLOCK: opening a fifo must not hang the tool; cleared below for regular files
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    text = os.fspath(real)
    try:
        fd = _openat2_no_symlinks(text, flags)
    except OSError as exc:
        raise walk_error(Path(text), exc) from None
    if fd is None:
        cut = text.rfind("/")
        folder, name = text[:cut] or "/", text[cut + 1:]
        if name in ("", ".", ".."):  # not a resolved file's path: as pathlib reads it
            folder, name = str(Path(text).parent), Path(text).name
        dfd = open_dir(folder)
        try:
            try:
                fd = os.open(name, flags, dir_fd=dfd)
            except OSError as exc:
                raise walk_error(Path(text), exc) from None
        finally:
            os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise NotRegular(errno.EISDIR, f"{text} is a directory")
        raise NotRegular(errno.EINVAL, f"{text} is not a regular file")
    if not keep_nonblocking:
        os.set_blocking(fd, True)
    return fd, st


def read_nonblocking(fd: int, size: int) -> bytes:
    """``os.read`` of an fd ``open_read_stat`` left non-blocking: a regular
    file's read ignores O_NONBLOCK (open(2)), but a file system may honour
    it (FUSE passes it on), so a read that would block clears it and reads
    again, as from a blocking fd."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        os.set_blocking(fd, True)
        return os.read(fd, size)

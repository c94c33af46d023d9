"""Opening and writing exactly the file that was checked.

The permission decision is made on a resolved path (no ``..``, no symlinks).
Between that decision and the open, another process could swap a component
for a symlink pointing elsewhere. So every open here walks the resolved path
one component at a time, relative to the previous directory's fd, with
``O_NOFOLLOW``: a component that has become a symlink makes the open fail
(ELOOP/ENOTDIR) instead of being followed. Writes go to a temp file in the
target's directory fd and are renamed over the name inside that same fd, so
a swapped parent cannot redirect them either.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "PathChanged",
    "MultiplyLinked",
    "NotRegular",
    "atomic_write",
    "open_dir",
    "open_dir_readable",
    "open_read",
    "stat_nofollow",
]

# O_PATH lets us walk directories we may search but not list; it exists on Linux only.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


class PathChanged(OSError):
    """A component of the checked path is no longer what was checked (a symlink appeared)."""


class MultiplyLinked(OSError):
    """The file has other hard links, which may live outside the working directories."""


class NotRegular(OSError):
    """The name is something other than a regular file (a directory, a device, a fifo)."""


def _walk_error(path: Path, exc: OSError) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return PathChanged(exc.errno, f"{path} changed while it was being opened (a symlink in the way?)")
    return exc


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
    syscall, how_type = ready
    how = how_type(flags, 0, _RESOLVE_NO_SYMLINKS)
    # Typed arguments: syscall(2) is variadic, and the kernel reads the last one as a size_t.
    fd = syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(_AT_FDCWD), os.fsencode(path), ctypes.byref(how),
                 ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err == errno.ENOSYS:  # an older kernel
        _openat2_state[0] = None
        return None
    if err in (errno.EPERM, errno.E2BIG, errno.EINVAL):  # a seccomp filter, or a flag it cannot take: walk
        return None
    raise OSError(err, os.strerror(err), path)


def _load_openat2() -> tuple[Any, Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    return syscall, OpenHow


def open_dir(real_dir: Path) -> int:
    """An fd for ``real_dir``, reached without following any symlink."""
    if not real_dir.is_absolute():
        raise ValueError(f"{real_dir} is not absolute")
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in real_dir.parts[1:]:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _walk_error(real_dir, exc) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir_readable(real_dir: Path) -> int:
    """Like ``open_dir``, but an fd that can be listed (os.scandir) and read from."""
    fd = open_dir(real_dir)
    try:
        return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)


def stat_nofollow(real: Path) -> os.stat_result | None:
    """lstat of ``real`` reached through ``open_dir``; None when it does not exist."""
    dfd = open_dir(real.parent)
    try:
        return os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(dfd)


def open_read(real: Path) -> int:
    """A read-only fd on the regular file ``real``; raises PathChanged/NotRegular/OSError."""
    # O_NONBLOCK: opening a fifo must not hang the tool; cleared below for regular files
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = _openat2_no_symlinks(os.fspath(real), flags)
    except OSError as exc:
        raise _walk_error(real, exc) from None
    if fd is None:
        dfd = open_dir(real.parent)
        try:
            try:
                fd = os.open(real.name, flags, dir_fd=dfd)
            except OSError as exc:
                raise _walk_error(real, exc) from None
        finally:
            os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(errno.EINVAL, f"{real} is not a regular file")
    os.set_blocking(fd, True)
    return fd


def atomic_write(
    real: Path,
    data: bytes,
    *,
    allow_multilinked: bool = False,
    default_mode: int = 0o644,
) -> os.stat_result:
    """Replace ``real`` with ``data``: entirely old or entirely new, whatever happens.

    The temp file lives in the same directory (a rename across filesystems is
    not atomic), is fsynced before the rename, and gets the old file's
    permission bits. Returns the stat of the new file.
    """
    dfd = open_dir(real.parent)
    tmp = f".{real.name}.{secrets.token_hex(6)}.pegboard-tmp"
    try:
        try:
            old = os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None:
            if stat.S_ISLNK(old.st_mode):
                raise PathChanged(errno.ELOOP, f"{real} became a symlink after it was checked")
            if not stat.S_ISREG(old.st_mode):
                raise NotRegular(errno.EINVAL, f"{real} is not a regular file")
            if old.st_nlink > 1 and not allow_multilinked:
                raise MultiplyLinked(errno.EMLINK, f"{real} has {old.st_nlink} hard links")
        # a new file gets default_mode through the umask, like any other program's file
        create_mode = 0o600 if old is not None else default_mode
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, create_mode, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view[:_CHUNK])
                view = view[n:]
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, real.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            _unlink_quietly(tmp, dfd)
            raise
        # the rename itself must reach the disk for "new" to survive a power cut
        _fsync_dir(dfd)
        return os.stat(real.name, dir_fd=dfd, follow_symlinks=False)
    except BaseException:
        _unlink_quietly(tmp, dfd)
        raise
    finally:
        os.close(dfd)


def _unlink_quietly(name: str, dfd: int) -> None:
    try:
        os.unlink(name, dir_fd=dfd)
    except OSError:
        pass


def _fsync_dir(dfd: int) -> None:
    # dfd may be an O_PATH fd, which cannot be fsynced: open the directory for reading
    try:
        rfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return
    try:
        os.fsync(rfd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename already happened
    finally:
        os.close(rfd)

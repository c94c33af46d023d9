"""Writing a file whole or not at all, through one helper (public as
``pegboard.paths.atomic_write``), and reaching a resolved folder without
following a symlink.

A permission decision is made on a resolved path. Between that decision and
the write, another process could swap a component for a symlink pointing
elsewhere, so the folder is walked one component at a time, each opened
relative to the previous one with ``O_NOFOLLOW``: a component that became a
symlink fails the walk instead of being followed. The data goes to a temp
file in that folder's fd, is fsynced, and is renamed over the name inside
the same fd (so a swapped parent cannot redirect it), and the folder is
fsynced so the rename survives a power cut.

A process killed between creating its temp file and the rename leaves the
temp file behind. The next write into the same folder removes such orphans
once they are older than ``ORPHAN_AGE_S``; see ``_sweep_orphans`` for why
the age is what tells an orphan from a live writer's file.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import time
from pathlib import Path

__all__ = ["MultiplyLinked", "NotRegular", "PathChanged", "atomic_write", "open_dir", "walk_error"]

# O_PATH lets us walk directories we may search but not list; it exists on Linux only.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
_TMP_SUFFIX = ".pegboard-tmp"
_TMP_NAME = re.compile(r"\..+\.[0-9a-f]{12}" + re.escape(_TMP_SUFFIX), re.DOTALL)
# A temp file untouched this long is an interrupted write's: a live writer
# moves its mtime with every chunk, and after the last one only an fsync
# stands before the rename.
ORPHAN_AGE_S = 15 * 60
# A folder is looked through at most this often per process (listing a big
# folder on every write would cost more than the orphans do).
_SWEEP_EVERY_S = 60.0
_swept: dict[tuple[int, int], float] = {}


class PathChanged(OSError):
    """A component of the checked path is no longer what was checked (a symlink appeared)."""


class MultiplyLinked(OSError):
    """The file has other hard links, which may live outside the working directories."""


class NotRegular(OSError):
    """The name is something other than a regular file (a directory, a device, a fifo)."""


def walk_error(path: Path, exc: OSError) -> OSError:
    """What a failed no-follow open of ``path`` means: ``PathChanged`` when a
    symlink (or a non-folder) was in the way, else ``exc`` itself."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return PathChanged(exc.errno, f"{path} changed while it was being opened (a symlink in the way?)")
    return exc


def open_dir(real_dir: Path | str) -> int:
    """An fd for ``real_dir``, reached without following any symlink."""
    text = os.fspath(real_dir)
    if not text.startswith("/"):
        raise ValueError(f"{real_dir} is not absolute")
    # A resolved path's names are its text cut at each "/" (pathlib's parse of
    # it cost a small Read where openat2 is missing a third of its walk); a
    # path that is not clean ("//", "/./", a trailing "/") goes as pathlib reads it.
    names = text.split("/")[1:]
    if "" in names or "." in names:
        names = list(Path(text).parts[1:])
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in names:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise walk_error(Path(text), exc) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def atomic_write(
    real: Path,
    data: bytes | str,
    *,
    allow_multilinked: bool = False,
    default_mode: int = 0o644,
) -> os.stat_result:
    """Replace the file at ``real`` with ``data`` (text is written as UTF-8):
    entirely old or entirely new, whatever happens.

    ``real`` must be resolved (``pegboard.paths.resolve_path``): no symlink
    in it is followed, and ``PathChanged`` says one appeared; the name must
    be a regular file or nothing (``NotRegular``), with one link unless
    ``allow_multilinked`` (``MultiplyLinked``). The temp file lives in the
    same folder (a rename across filesystems is not atomic), is fsynced
    before the rename, and gets the old file's permission bits, or
    ``default_mode`` (through the umask) for a new file: ``0o600`` for a
    secret. Returns the stat of the new file.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    dfd = open_dir(real.parent)
    tmp = f".{real.name}.{secrets.token_hex(6)}{_TMP_SUFFIX}"
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
        # before this write's own temp file: space the orphans held may be what it needs
        _sweep_orphans(dfd)
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


def _sweep_orphans(dfd: int) -> None:
    """Remove the temp files interrupted writes left in the folder ``dfd``.

    Age, not a pid in the name, tells an orphan: a pid names no process
    across pid namespaces (a sandbox, a container sharing the folder) or
    machines (a network file system), and pids are reused; no live writer's
    temp file goes ``ORPHAN_AGE_S`` without a change. It runs before the
    write makes its own temp file, so a disk the orphans filled has their
    space back first. Best effort: it must not fail the write that called
    it, and an orphan that cannot be removed now (another user's, in a
    sticky folder) is tried again on a later write.
    """
    try:
        folder = os.fstat(dfd)
    except OSError:
        return
    key = (folder.st_dev, folder.st_ino)
    clock = time.monotonic()
    last = _swept.get(key)
    if last is not None and clock - last < _SWEEP_EVERY_S:
        return
    if len(_swept) > 4096:
        _swept.clear()
    _swept[key] = clock
    cutoff = time.time() - ORPHAN_AGE_S
    try:
        rfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return  # a folder we may write in but not list: nothing to find
    try:
        with os.scandir(rfd) as entries:
            for entry in entries:
                if not (entry.name.endswith(_TMP_SUFFIX) and _TMP_NAME.fullmatch(entry.name)):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    _unlink_quietly(entry.name, dfd)
    except OSError:
        pass
    finally:
        os.close(rfd)


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

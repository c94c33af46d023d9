"""Confinement for commands: bubblewrap, else Landlock, else none (and say so).

Both refuse socket(AF_UNIX) through seccomp: a read-only mount does not stop
connect() on a socket file, and /run/docker.sock or an agent socket would
otherwise be a way out.

bubblewrap gives the strongest box: the whole file system read-only except the
directories a policy lets the command write, every protected path in them
re-mounted read-only on top (``_guard``), the session's own /tmp (kept between the calls
of a session, never the host's), new PID/IPC/network namespaces,
no capabilities (as root, bwrap keeps them unless told, and CAP_SYS_ADMIN
would let ``mount -o remount,rw`` undo a read-only bind), its own session
(no TIOCSTI into our terminal), and death with its parent.

Landlock is the fallback where bwrap cannot run (no user namespaces): a small
launcher (``_landlock.py``) restricts writes to the same directories and,
with ABI 4, TCP connect/bind. It cannot keep ``.git`` read-only inside a
writable directory, and does not hide UDP or the host's processes;
``pegboard doctor`` says so, and ``protects_inside`` tells the permission
vote not to count such a box as safe.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pegboard.paths import is_within

from ._confine import Backend, _bwrap, _bwrap_base, backend_for, bwrap_works, can_confine, landlock_abi
from ._landlock import unix_socket_filter

__all__ = ["Backend", "Box", "backend_for", "bwrap_works", "can_confine", "landlock_abi", "protects_inside", "wrap"]

_LAUNCHER = Path(__file__).with_name("_landlock.py")

@dataclass(frozen=True)
class Box:
    """What a confined command may do.

    ``writable``: directories it may write (empty: the file system is
    read-only). ``readonly``: paths inside those kept read-only (protected
    paths, what deny rules name). ``network``: whether it may reach the network. ``tmp``: the
    session's scratch directory (bwrap mounts it on /tmp; Landlock lets
    TMPDIR point there); None gives bwrap an empty tmpfs. ``unix_sockets``:
    let the command create AF_UNIX sockets (docker.sock, D-Bus, agents).
    ``hidden``: paths it may not read at all (what ``Read`` deny rules name):
    bwrap puts an empty file or folder over each; Landlock cannot.
    """

    writable: tuple[Path, ...]
    readonly: tuple[Path, ...]
    network: bool
    tmp: Path | None = None
    unix_sockets: bool = False
    hidden: tuple[Path, ...] = ()


Wrapped = tuple[list[str], tuple[int, ...]]


def _remount_covered(box: Box) -> list[str]:
    """The box's own /dev and /proc again where a writable folder holds them
    (``additional_directories = ["/"]``): its bind brings the host's in,
    whose device nodes cannot be opened from the box (``/dev/null``:
    permission denied) and whose /proc/sys would be writable. (/tmp is left
    as that folder's bind shows it: the person made it writable.)"""
    def covered(place: str) -> bool:
        return any(is_within(Path(place), w) for w in box.writable)

    args: list[str] = []
    if covered("/dev"):
        args += ["--dev", "/dev"]
    if covered("/proc"):
        args += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
                 "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
    return args


def wrap(backend: Backend, box: Box, argv: Sequence[str]) -> Wrapped:
    """``argv`` run inside ``box`` with ``backend``, and the descriptors the
    child must inherit (the seccomp program for bwrap). The caller closes
    them once the child has started."""
    if backend == "bubblewrap":
        exe = _bwrap() or "/usr/bin/bwrap"
        args = [exe, *_bwrap_base(network=box.network)]
        fds: tuple[int, ...] = ()
        program = None if box.unix_sockets else unix_socket_filter()
        if program is not None:
            fd = os.memfd_create("pegboard-seccomp")
            os.write(fd, program)
            os.lseek(fd, 0, os.SEEK_SET)
            args += ["--seccomp", str(fd)]
            fds = (fd,)
        args += ["--bind", str(box.tmp), "/tmp"] if box.tmp is not None else ["--tmpfs", "/tmp"]
        # Later mounts win: writable dirs over the read-only root, then the
        # protected paths back to read-only over those.
        for path in box.writable:
            if path.exists():
                args += ["--bind", str(path), str(path)]
        args += _remount_covered(box)
        for path in box.readonly:
            if path.exists():
                args += ["--ro-bind", str(path), str(path)]
        for path in box.hidden:
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        return [*args, "--", *argv], fds
    if backend == "landlock":
        args = [sys.executable, "-I", "-S", str(_LAUNCHER)]
        for path in box.writable:
            args += ["--rw", str(path)]
        if box.tmp is not None:
            args += ["--rw", str(box.tmp)]
        for path in box.hidden:
            args += ["--hide", str(path)]
        if not box.network:
            args.append("--no-tcp")
        if not box.unix_sockets and unix_socket_filter() is not None:
            args.append("--no-unix")
        return [*args, "--", *argv], ()
    return list(argv), ()


def protects_inside(backend: Backend, box: Box) -> bool:
    """Whether ``box`` keeps its read-only paths read-only under ``backend``."""
    if backend == "bubblewrap":
        return True
    if backend == "landlock":
        return not box.writable
    return False


def describe(backend: Backend) -> str:
    if backend == "bubblewrap":
        return ("bubblewrap: read-only root, writable working directories with every protected path in them "
                "read-only, credentials hidden, a per-session /tmp, no network")
    if backend == "landlock":
        abi = landlock_abi()
        net = "TCP blocked" if abi >= 4 else "network NOT blocked (Landlock ABI < 4)"
        sig = "signals kept inside" if abi >= 6 else "signals to other processes NOT blocked (ABI < 6)"
        return (f"Landlock ABI {abi}: writes confined to the working directories, .git inside them writable; "
                "credentials hidden; "
                f"{net}, UDP not; {sig}; capabilities dropped")
    return "no sandbox: commands run with the user's full rights"


def private_tmp(base: Path) -> Path:
    path = base / "tmp"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path

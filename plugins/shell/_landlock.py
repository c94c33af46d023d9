"""Landlock launcher: confine writes (and TCP) then exec the command.

Run as ``python -I -S _landlock.py --rw DIR ... [--no-tcp] [--no-unix] -- argv``.
It is a standalone script (stdlib only, no pegboard import) so that starting
it costs one bare interpreter, and it restricts itself before exec so the
command and all its children inherit the rules; the restriction cannot be
lifted from inside (that is how Landlock works, and no_new_privs is set).

As root the command would otherwise keep every capability (Landlock takes
none away): the launcher empties the bounding, ambient and current sets
first. With ABI 6 it also scopes signals and abstract unix sockets to the box.

Landlock rules only add rights to a whole hierarchy: a ``.git`` inside a
writable directory cannot be kept read-only. The plugin therefore never counts
a Landlock box with writable directories as safe enough to run without asking.

``--hide PATH`` keeps a path from being read the same way round: reading
files is handled, and granted beneath every entry of every folder on the way
from ``/`` to a hidden path except the one leading there (and beneath the
writable directories, which hold no hidden path). Folders on that way list
as usual; a file created in one of them after the start cannot be read.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import NoReturn

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446
_PATH_BENEATH = 1
_NET_PORT = 2
_PR_SET_NO_NEW_PRIVS = 38

_READ_FILE = 1 << 2
_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE = sum(1 << n for n in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER = 1 << 13
_TRUNCATE = 1 << 14
_NET_BIND, _NET_CONNECT = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """Run as root, the command would keep every capability: Landlock does not
    take CAP_SYS_MODULE or CAP_KILL away. Empty the bounding and ambient sets
    (so no exec, setuid or not, regains any) and then the current sets."""
    if os.geteuid() != 0 and not _has_caps():
        return
    for cap in range(64):
        # PR_CAPBSET_DROP; EINVAL means the kernel has no capability of that number.
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
            _fail(f"cannot drop capability {cap} from the bounding set: {os.strerror(ctypes.get_errno())}")
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.syscall(126 if _machine() == "x86_64" else 91, ctypes.byref(header), data) != 0:  # capset
        _fail(f"capset: {os.strerror(ctypes.get_errno())}")


def _machine() -> str:
    return os.uname().machine


def _has_caps() -> bool:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16) != 0
    except OSError:
        pass
    return True


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# --- seccomp: no AF_UNIX sockets ---------------------------------------------------
#
# A read-only bind does not stop connect() on a socket file (only regular files,
# directories and links get EROFS), so /run/docker.sock, a D-Bus bus or an ssh or
# gpg agent in $HOME would be reachable from the box. socket(AF_UNIX) fails
# instead; socketpair() stays (it reaches nothing outside). io_uring is refused
# because it can create sockets without the socket syscall, and any other
# architecture's syscalls (i386 socketcall, x32) are refused outright.

_ARCHES = {  # machine: (AUDIT_ARCH_*, __NR_socket, x32 bit to refuse or 0)
    "x86_64": (0xC000003E, 41, 0x40000000),
    "aarch64": (0xC00000B7, 198, 0),
}
_NR_IO_URING_SETUP = 425  # the same number on every architecture
_AF_UNIX = 1
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1


def unix_socket_filter() -> bytes | None:
    """The classic BPF program, as bwrap --seccomp and PR_SET_SECCOMP take it;
    None on an architecture we have no numbers for."""
    import struct

    arch = _ARCHES.get(os.uname().machine)
    if arch is None:
        return None
    audit, nr_socket, x32 = arch
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    # (code, jt, jf, k) with jumps written as labels and resolved below.
    prog: list[tuple[int, object, object, int]] = [
        (ld, 0, 0, 4),                       # arch
        (jeq, 0, "deny", audit),
        (ld, 0, 0, 0),                       # syscall number
        (jge, "deny", 0, x32) if x32 else (jeq, "deny", 0, 0xFFFFFFFF),
        (jeq, "deny", 0, _NR_IO_URING_SETUP),
        (jeq, 0, "allow", nr_socket),
        (ld, 0, 0, 16),                      # args[0], low half (little endian)
        (jeq, "deny", "allow", _AF_UNIX),
        (ret, 0, 0, _RET_ALLOW),             # allow
        (ret, 0, 0, _RET_EPERM),             # deny
    ]
    labels = {"allow": len(prog) - 2, "deny": len(prog) - 1}
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        jt_n = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf_n = labels[jf] - i - 1 if isinstance(jf, str) else jf
        out += struct.pack("<HBBI", code, jt_n, jf_n, k)
    return out


def _install_filter(libc: ctypes.CDLL, program: bytes) -> None:
    class _Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    prog = _Fprog(len(program) // 8, program)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        _fail(f"seccomp: {os.strerror(ctypes.get_errno())}")


def _fail(msg: str) -> NoReturn:
    sys.stderr.write(f"pegboard landlock: {msg}\n")
    sys.exit(126)


def read_grants(hidden: list[str]) -> list[str]:
    """Where reading may be granted as a whole hierarchy so that nothing in
    ``hidden`` (real paths) can be read: every entry of the folders leading
    to a hidden path, but that path and those folders themselves. Symbolic
    links get no rule: they resolve to a target granted or not on its own."""
    hidden = [h.rstrip("/") or "/" for h in hidden if os.path.lexists(h)]
    if not hidden:
        return ["/"]
    if "/" in hidden:
        return []
    ancestors = {os.path.dirname(h) for h in hidden}
    for h in list(ancestors):
        while h != "/":
            h = os.path.dirname(h)
            ancestors.add(h)
    out: list[str] = []
    for folder in sorted(ancestors):
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # unreadable to us: nothing there is granted
        for name in names:
            path = os.path.join(folder, name)
            if path in ancestors or path in hidden or os.path.islink(path):
                continue
            out.append(path)
    return out


def main(argv: list[str]) -> None:
    rw: list[str] = []
    hide: list[str] = []
    no_tcp = False
    no_unix = False
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--rw" and i + 1 < len(argv):
            rw.append(os.path.realpath(argv[i + 1]))
            i += 2
        elif argv[i] == "--hide" and i + 1 < len(argv):
            hide.append(os.path.realpath(argv[i + 1]))
            i += 2
        elif argv[i] == "--no-tcp":
            no_tcp = True
            i += 1
        elif argv[i] == "--no-unix":
            no_unix = True
            i += 1
        else:
            _fail(f"unknown argument {argv[i]!r}")
    command = argv[i + 1:]
    if not command:
        _fail("no command")
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_CREATE, None, 0, 1)
    if abi < 1:
        _fail("Landlock is not available")
    fs = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        fs |= _REFER
    if abi >= 3:
        fs |= _TRUNCATE
    if hide:
        fs |= _READ_FILE
    net = (_NET_BIND | _NET_CONNECT) if (no_tcp and abi >= 4) else 0
    # ABI 6: no signals to processes outside the box, no abstract unix sockets out of it.
    scoped = (_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX) if abi >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 24 if scoped else (16 if net else 8)
    ruleset = libc.syscall(_CREATE, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        _fail(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")

    def grant(path: str, access: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            is_dir = os.path.isdir(path)
            rule = _PathBeneath(access if is_dir else access & (_READ_FILE | _WRITE_FILE | _TRUNCATE), fd)
            if libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                _fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)

    for path in rw:
        grant(path, fs)
    for dev in ("/dev/null", "/dev/zero", "/dev/tty", "/dev/full"):
        grant(dev, (_WRITE_FILE | _TRUNCATE | _READ_FILE) & fs)
    if hide:
        for path in read_grants(hide):
            grant(path, _READ_FILE)
    _drop_capabilities(libc)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(NO_NEW_PRIVS) failed")
    if libc.syscall(_RESTRICT, ruleset, 0) != 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)
    if no_unix:
        program = unix_socket_filter()
        if program is None:
            _fail("no seccomp numbers for this architecture")
        _install_filter(libc, program)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        _fail(f"cannot run {command[0]}: {exc}")


if __name__ == "__main__":
    main(sys.argv[1:])

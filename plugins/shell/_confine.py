"""Whether commands can be confined here, and by what: bubblewrap's trial
sandbox, Landlock's ABI. Light (stdlib only), so that registering Bash at
every start-up learns its level without importing the sandbox itself
(``_sandbox``: its box, its wrapping, the Landlock launcher's filter)."""

from __future__ import annotations

import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Literal

__all__ = ["Backend", "backend_for", "bwrap_works", "can_confine", "landlock_abi"]

Backend = Literal["bubblewrap", "landlock", "none"]

# bwrap is looked up in system directories only: a PATH entry the model can
# write to (a project's bin/) must not supply the sandbox itself.
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _bwrap() -> str | None:
    return shutil.which("bwrap", path=_SYSTEM_PATH)


@lru_cache(maxsize=1)
def bwrap_works() -> str | None:
    """None when bubblewrap runs a confined command here, else why not.

    The trial sandbox is a process of its own (about 10 ms); its answer is
    kept for this boot, this user and this bwrap binary (``_kept_trial``),
    so that each new process deciding a Bash call does not start it again.
    A kept answer that went stale fails closed either way: a box that no
    longer starts makes the command fail, a "no" only makes calls ask."""
    exe = _bwrap()
    if exe is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    key = _trial_key(exe)
    kept = _kept_trial(key)
    if kept is not None:
        return kept[0]
    why = _bwrap_trial(exe)
    _keep_trial(key, why)
    return why


def _bwrap_trial(exe: str) -> str | None:
    import subprocess  # here: registering Bash asks Landlock first and starts no process

    try:
        proc = subprocess.run(
            [exe, *_bwrap_base(network=False), "--tmpfs", "/tmp", "--", "/bin/sh", "-c", "true"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap failed to start: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot create a sandbox here: {proc.stderr.decode(errors='replace').strip()[:300]}"
    return None


def _trial_key(exe: str) -> list[object] | None:
    """What the trial's answer depends on: the binary, the boot (a sysctl
    that allows user namespaces changes with it), the user. None: unknown."""
    import os

    try:
        st = os.stat(exe)
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        return None
    return [exe, st.st_ino, st.st_mtime_ns, st.st_size, boot, os.getuid()]


def _trial_file() -> Path:
    from pegboard.paths import config_dir

    return config_dir() / "cache" / "shell-bwrap-trial.json"


def _kept_trial(key: list[object] | None) -> tuple[str | None] | None:
    """The kept answer for ``key``, as a 1-tuple (None: nothing kept for it). Only a file of this
    user's that nobody else may write is read."""
    import json
    import os
    import stat

    if key is None:
        return None
    path = _trial_file()
    try:
        with open(path, encoding="utf-8") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or not stat.S_ISREG(st.st_mode):
                return None
            data = json.loads(f.read(4096))
    except (OSError, ValueError):
        return None
    why = data.get("why") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("key") != key or not (why is None or isinstance(why, str)):
        return None
    return (why,)


def _keep_trial(key: list[object] | None, why: str | None) -> None:
    import json

    from pegboard.paths import PathChanged, atomic_write, resolve_path

    if key is None:
        return
    path = _trial_file()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(resolve_path(path, path.parent), json.dumps({"key": key, "why": why}), default_mode=0o600)
    except (OSError, PathChanged, ValueError):
        pass  # only speed is lost: the next process runs the trial again


@lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def backend_for(preference: str) -> Backend:
    """The backend that ``preference`` ("auto", "bubblewrap", "landlock",
    "off") gives on this machine; "none" when that one does not work."""
    if preference == "off":
        return "none"
    if preference in ("auto", "bubblewrap") and bwrap_works() is None:
        return "bubblewrap"
    if preference in ("auto", "landlock") and landlock_abi() >= 1:
        return "landlock"
    return "none"


def can_confine(preference: str) -> bool:
    """``backend_for(preference) != "none"``, asked the cheap way first:
    with "auto", a kernel with Landlock answers it by one system call, so
    registering the tools at every start does not run bubblewrap's trial
    sandbox (a process, tens of milliseconds) only to learn the same yes."""
    if preference == "auto" and landlock_abi() >= 1:
        return True
    return backend_for(preference) != "none"


def _bwrap_base(*, network: bool) -> list[str]:
    args = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        # As root, sysctls are writable by uid alone (no capability needed for
        # most): vm.*, kernel.* are the host's. bwrap covers these only when it
        # finds them writable; say it explicitly.
        "--ro-bind", "/proc/sys", "/proc/sys",
        "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--new-session", "--die-with-parent",
        "--cap-drop", "ALL",
    ]
    if not network:
        args.append("--unshare-net")
    return args

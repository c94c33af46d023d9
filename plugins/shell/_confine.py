"""Whether commands can be confined here, and by what: bubblewrap's trial
sandbox, Landlock's ABI. Light (stdlib only), so that registering Bash at
every start-up learns its level without importing the sandbox itself
(``_sandbox``: its box, its wrapping, the Landlock launcher's filter)."""

from __future__ import annotations

import shutil
import sys
from functools import lru_cache
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
    """None when bubblewrap runs a confined command here, else why not."""
    exe = _bwrap()
    if exe is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
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

"""``pegboard doctor`` for the shell plugin: is there a sandbox, and which."""

from __future__ import annotations

import shutil
from typing import Literal

from pegboard import Check

from ._config import ShellConfig
from ._sandbox import backend_for, bwrap_works, describe, landlock_abi

__all__ = ["checks"]


def checks(config: ShellConfig, plugin: str) -> list[Check]:
    """``plugin``: the name the shell plugin is installed under (its table's)."""
    out: list[Check] = []
    why = bwrap_works()
    out.append(Check("bubblewrap", "ok" if why is None else "warn", "works" if why is None else why))
    abi = landlock_abi()
    out.append(Check("landlock", "ok" if abi else "warn",
                     f"ABI {abi}" if abi else "not available in this kernel"))
    backend = backend_for(config.sandbox)
    if backend == "none":
        wanted = f"sandbox = \"off\" in [plugins.{plugin}]" if config.sandbox == "off" else \
            f"no working backend for sandbox = {config.sandbox!r}"
        out.append(Check("sandbox", "fail",
                         f"{wanted}: commands run unconfined, none counts as sandboxed, "
                         "and Bash needs the unrestricted level"))
    else:
        status: Literal["ok", "warn"] = "ok" if backend == "bubblewrap" else "warn"
        out.append(Check("sandbox", status, describe(backend)))
    if backend != "none":
        from ._landlock import unix_socket_filter

        if unix_socket_filter() is None:
            out.append(Check("unix sockets", "warn", "no seccomp numbers for this CPU: sandboxed commands can "
                             "connect to socket files (docker.sock, agents) they can see"))
        elif config.allow_unix_sockets:
            out.append(Check("unix sockets", "warn", "allow_unix_sockets = true: sandboxed commands can reach "
                             "docker.sock, D-Bus and agent sockets"))
    if shutil.which("git") is None:
        out.append(Check("git", "warn", "git not found: git commands and worktrees will fail"))
    return out

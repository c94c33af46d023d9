"""Shared helpers for the mcp plugin's tests: real servers, free ports, process checks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
KITCHEN_SINK = HERE / "kitchen_sink.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on {port}")


def start_http_server(
    script: Path = KITCHEN_SINK, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), "--http", str(port)],
                            env={**os.environ, **(env or {})}, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/mcp"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pid: int, limit_s: float = 10.0) -> bool:
    """True once ``pid`` is gone; a killed process can take a moment to finish dying."""
    deadline = time.monotonic() + limit_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True

"""Run ``pegboard`` at a real terminal (a pty) and answer its prompts."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["converse"]


def converse(args: list[str], answers: dict[bytes, bytes], env: dict[str, str] | None = None,
             timeout: float = 30) -> tuple[int, str]:
    """Run ``pegboard *args`` on a pty; each time a prompt in ``answers``
    appears in the output, type its answer (every prompt may come again).
    Returns the exit code and everything the terminal showed."""
    exe = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([exe, *args], stdin=follower, stdout=follower, stderr=follower, env=full_env,
                            close_fds=True)
    os.close(follower)
    seen = b""
    answered = 0  # how much of the output has been answered already
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        for prompt, answer in answers.items():
            at = seen.find(prompt, answered)
            if at >= 0:
                os.write(leader, answer)
                answered = at + len(prompt)
    os.close(leader)
    return proc.wait(timeout=timeout), seen.decode(errors="replace")

"""``pegboard call`` shows a tool's output as it comes at a terminal (a pty),
and on a pipe only when asked (``--stream``). The command waits for a file
the test makes only once it has seen the first line, so a line held back
until the end would never let it finish: no clock is read."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

COMMAND = "echo start; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo done"


def _exe() -> str:
    return shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")


def _args(*extra: str) -> list[str]:
    return [_exe(), "call", "Bash", "--mode", "bypassPermissions", "--input", json.dumps({"command": COMMAND}),
            *extra]


def _read_until(fd: int, wanted: bytes, seen: bytes) -> bytes:
    while wanted not in seen:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.fixture
def env() -> dict[str, str]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_at_a_terminal_the_first_line_shows_before_the_command_ends(tmp_path: Path, env: dict[str, str]) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(_args(), cwd=tmp_path, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    try:
        seen = _read_until(leader, b"start", b"")
        assert b"start" in seen and b"done" not in seen, seen
        (tmp_path / "go").touch()  # only now can the command end
        seen = _read_until(leader, b"done", seen)
    finally:
        code = proc.wait(timeout=60)
        os.close(leader)
    assert code == 0
    assert seen.replace(b"\r", b"").split() == [b"start", b"done"]  # each line once: the result less what was shown


def test_on_a_pipe_only_when_asked(tmp_path: Path, env: dict[str, str]) -> None:
    proc = subprocess.Popen(_args("--stream"), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    seen = _read_until(proc.stdout.fileno(), b"start", b"")
    assert b"start" in seen and b"done" not in seen
    (tmp_path / "go").touch()
    out, _ = proc.communicate(timeout=60)
    assert (seen + out).split() == [b"start", b"done"]
    (tmp_path / "go").touch()
    plain = subprocess.run(_args(), cwd=tmp_path, capture_output=True, env=env, timeout=60)
    assert plain.returncode == 0 and plain.stdout.split() == [b"start", b"done"]

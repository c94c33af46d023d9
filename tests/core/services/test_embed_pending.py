"""Approvals that wait: a host answers Answer.later(), the call becomes a
pending call, and it is resolved later, in this process, from another
process (pegboard approvals), or after a restart (durable sessions)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl

pytestmark = pytest.mark.anyio

PEGBOARD = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")


class LaterHost:
    """A web UI's host: it shows the question elsewhere and answers later."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer.later()

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))


def _load(root: Path, host: object | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["fs"], host=host)


async def test_a_call_waits_and_runs_once_approved(tmp_path: Path) -> None:
    host = LaterHost()
    session = _load(tmp_path, host).session("default")
    target = tmp_path / "out.txt"
    first = await session.call("Write", {"file_path": str(target), "content": "hi\n"}, call_id="w1")
    assert first.is_error and "pending call p-" in first.text_content() and not target.exists()
    [waiting] = session.pending.list()
    assert (waiting.tool, waiting.call_id, waiting.status) == ("Write", "w1", "pending")
    assert waiting.suggestions and ("approval.pending", waiting.to_json()) in host.events
    # Reads go on meanwhile.
    assert not (await session.call("Glob", {"pattern": "*"})).is_error
    result = await session.pending.resolve(waiting.id, Answer(allow=True))
    assert not result.is_error, result.text_content()
    assert target.read_text() == "hi\n"
    assert session.pending.list() == []
    assert any(kind == "approval.resolved" and data["allowed"] for kind, data in host.events)
    again = await session.pending.resolve(waiting.id, Answer(allow=True))
    assert again.is_error and "No pending call" in again.text_content()


async def test_a_denied_pending_call_tells_the_model_why(tmp_path: Path) -> None:
    session = _load(tmp_path, LaterHost()).session("default")
    await session.call("Write", {"file_path": str(tmp_path / "out.txt"), "content": "x"})
    [waiting] = session.pending.list()
    result = await session.pending.resolve(waiting.id, Answer(allow=False, message="Use the docs folder."))
    assert result.is_error and "Use the docs folder." in result.text_content()
    assert not (tmp_path / "out.txt").exists()
    unanswered = await session.pending.resolve("p-nope")
    assert unanswered.is_error


@pytest.mark.slow
async def test_answered_from_another_process_and_run_after_a_restart(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    first = _load(tmp_path, LaterHost()).session("default", session_id="conv-1")
    waited = await first.call("Write", {"file_path": str(target), "content": "later\n", "scratchpad": None})
    assert "pending call" in waited.text_content()
    await first.aclose()  # the host process ends

    # Another process sees it and answers it.
    env = {**os.environ, "PEGBOARD_PLUGINS": "fs"}
    listed = subprocess.run([PEGBOARD, "approvals", "list", "--json", "--cwd", str(tmp_path)],
                            capture_output=True, text=True, env=env, timeout=120)
    [row] = json.loads(listed.stdout)
    assert row["session_id"] == "conv-1" and row["tool"] == "Write" and row["status"] == "pending"
    approved = subprocess.run([PEGBOARD, "approvals", "approve", row["id"], "--remember", "session",
                               "--cwd", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert approved.returncode == 0, approved.stderr
    missing = subprocess.run([PEGBOARD, "approvals", "deny", "p-none", "--cwd", str(tmp_path)],
                             capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == 1 and "no call" in missing.stderr
    assert not target.exists()  # answered, not run: running is the session's host's

    # The host, restarted, resumes the session and runs what was approved.
    resumed = _load(tmp_path, LaterHost()).session("default", session_id="conv-1")
    [answered] = resumed.pending.list()
    assert answered.status == "approved" and answered.answer is not None and answered.answer.remember == "session"
    result = await resumed.pending.resolve(answered.id)
    assert not result.is_error, result.text_content()
    assert target.read_text() == "later\n"
    assert resumed.toolbox.pending_calls() == []
    # "remember": the next write in this session is allowed without asking.
    assert (await resumed.decide("Write", {"file_path": str(tmp_path / "b.txt"), "content": ""})).decision \
        == "allow"


async def test_deleting_a_session_deletes_its_pending_calls(tmp_path: Path) -> None:
    toolbox = _load(tmp_path, LaterHost())
    session = toolbox.session("default", session_id="gone")
    await session.call("Write", {"file_path": str(tmp_path / "x.txt"), "content": "x"})
    assert len(toolbox.pending_calls("gone")) == 1
    toolbox.delete_sessions(["gone"])
    assert toolbox.pending_calls() == []
    with pytest.raises(KeyError):
        toolbox.answer_pending("p-anything", Answer(allow=True))

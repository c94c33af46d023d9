"""An approval is bound to what was approved: the answer is kept with the
digest of the call's tool and input, a call changed in the store after it was
approved is refused when resolved; each pending call is answered once; and
``Answer.later()`` answers nothing. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl

pytestmark = pytest.mark.anyio

PEGBOARD = str(Path(sys.executable).parent / "pegboard")


class LaterHost:
    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer.later()


def _load(root: Path) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["fs"], host=LaterHost())


def approvals(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, "approvals", *args, "--cwd", str(root)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PEGBOARD_PLUGINS": "fs"})


async def _held(root: Path, session_id: str, target: Path) -> str:
    first = _load(root).session("default", session_id=session_id)
    waited = await first.call("Write", {"file_path": str(target), "content": "approved\n"})
    assert "pending call" in waited.text_content()
    [call] = first.pending.list()
    await first.aclose()
    return call.id


@pytest.mark.slow
async def test_an_input_changed_after_approval_is_refused(tmp_path: Path, store_url: str) -> None:
    target, other = tmp_path / "approved.txt", tmp_path / "other.txt"
    pending_id = await _held(tmp_path, "conv-b", target)
    approved = approvals(tmp_path, "approve", pending_id)
    assert approved.returncode == 0, approved.stderr

    # Someone with the store's rows changes what was approved.
    from sqlalchemy import update

    from pegboard._services.tables import pending

    toolbox = _load(tmp_path)
    with toolbox.plugins.stores("pegboard").begin() as conn:
        conn.execute(update(pending).where(pending.c.id == pending_id).values(
            input=json.dumps({"file_path": str(other), "content": "changed\n"})))

    resumed = toolbox.session("default", session_id="conv-b")
    result = await resumed.pending.resolve(pending_id)
    assert result.is_error and "changed after it was approved" in result.text_content(), result.text_content()
    assert not other.exists() and not target.exists()
    assert toolbox.pending_calls() == []  # settled as refused: no later resolve runs it
    again = await resumed.pending.resolve(pending_id)
    assert again.is_error and not other.exists()


@pytest.mark.slow
async def test_an_unchanged_approved_call_runs(tmp_path: Path, store_url: str) -> None:
    target = tmp_path / "approved.txt"
    pending_id = await _held(tmp_path, "conv-ok", target)
    assert approvals(tmp_path, "approve", pending_id).returncode == 0
    [row] = _load(tmp_path).pending_calls()
    assert row.digest == row.current_digest() and len(row.digest or "") == 64
    result = await _load(tmp_path).session("default", session_id="conv-ok").pending.resolve(pending_id)
    assert not result.is_error, result.text_content()
    assert target.read_text() == "approved\n"


@pytest.mark.slow
async def test_each_pending_call_is_answered_once(tmp_path: Path, store_url: str) -> None:
    pending_id = await _held(tmp_path, "conv-once", tmp_path / "a.txt")
    assert approvals(tmp_path, "deny", pending_id, "--message", "no").returncode == 0
    for verb in ("approve", "deny"):
        again = approvals(tmp_path, verb, pending_id)
        assert again.returncode == 1 and f"{pending_id} was answered already (denied)" in again.stderr, again.stderr
    toolbox = _load(tmp_path)
    with pytest.raises(ValueError, match="answered already"):
        toolbox.answer_pending(pending_id, Answer(allow=True))
    [row] = toolbox.pending_calls()
    assert row.status == "denied" and row.answer is not None and row.answer.message == "no"
    # The host cannot answer it otherwise either: the person's denial stands.
    session = toolbox.session("default", session_id="conv-once")
    other = await session.pending.resolve(pending_id, Answer(allow=True))
    assert other.is_error and "answered already" in other.text_content()
    settled = await session.pending.resolve(pending_id)
    assert settled.is_error and "no" in settled.text_content() and not (tmp_path / "a.txt").exists()


async def test_resolve_refuses_a_later_answer(tmp_path: Path) -> None:
    session = _load(tmp_path).session("default")
    await session.call("Write", {"file_path": str(tmp_path / "a.txt"), "content": "x"})
    [waiting] = session.pending.list()
    later = await session.pending.resolve(waiting.id, Answer.later())
    assert later.is_error and "Answer.later() does not answer" in later.text_content()
    assert [c.status for c in session.pending.list()] == ["pending"] and not (tmp_path / "a.txt").exists()
    with pytest.raises(ValueError, match="later"):
        session.toolbox.answer_pending(waiting.id, Answer.later())
    done = await session.pending.resolve(waiting.id, Answer(allow=True))
    assert not done.is_error and (tmp_path / "a.txt").read_text() == "x"


@pytest.mark.slow
async def test_an_input_changed_before_approval_is_refused_by_the_process_that_held_it(
        tmp_path: Path, store_url: str) -> None:
    target, other = tmp_path / "shown.txt", tmp_path / "other.txt"
    toolbox = _load(tmp_path)
    session = toolbox.session("default", session_id="conv-h")
    await session.call("Write", {"file_path": str(target), "content": "shown\n"})
    [call] = session.pending.list()
    from sqlalchemy import update

    from pegboard._services.tables import pending

    with toolbox.plugins.stores("pegboard").begin() as conn:  # changed before anyone answered
        conn.execute(update(pending).where(pending.c.id == call.id).values(
            input=json.dumps({"file_path": str(other), "content": "changed\n"})))
    result = await session.pending.resolve(call.id, Answer(allow=True))  # the host answers what it was shown
    assert result.is_error and "changed after it was" in result.text_content(), result.text_content()
    assert not other.exists() and not target.exists()

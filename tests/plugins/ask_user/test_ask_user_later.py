"""AskUserQuestion answered later: a host's pegboard_ask_user returns
Answer.later(), the question waits as a pending call (in the SQLite store for
a durable session, answered from another toolbox as another process would),
and resolving it gives the model the person's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl
from pegboard.plugins.ask_user import answer_question

pytestmark = pytest.mark.anyio

LIBRARY = {"question": "Which HTTP library should the client use?", "header": "Library", "multiSelect": False,
           "options": [{"label": "httpx", "description": "async and sync"},
                       {"label": "requests", "description": "sync only"}]}
CHECKS = {"question": "Which checks should run in CI?", "header": "CI checks", "multiSelect": True,
          "options": [{"label": "mypy", "description": "types"}, {"label": "ruff", "description": "lint"}]}


class Later:
    def __init__(self) -> None:
        self.asked = 0
        self.events: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def pegboard_ask_user(self, session: Any, questions: list[dict[str, Any]]) -> Answer:
        self.asked += 1
        return Answer.later()

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))


def load(root: Path, host: object | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["ask_user"], host=host)


async def test_a_durable_sessions_question_is_answered_from_elsewhere(tmp_path: Path) -> None:
    host = Later()
    toolbox = load(tmp_path, host)
    session = toolbox.session("default", session_id="asks-1")
    parked = await session.call("AskUserQuestion", {"questions": [LIBRARY, CHECKS]}, call_id="toolu_1")
    assert "wait for the person's answers as pending call" in parked.text_content()
    pending_id = parked.structured_content["pending"]
    assert [c.id for c in session.pending.list()] == [pending_id]
    assert ("approval.pending", pending_id) in [(k, d.get("id")) for k, d in host.events]
    # Another process (here another toolbox on the same store) lists it and answers it.
    elsewhere = load(tmp_path)
    waiting = elsewhere.pending_calls("asks-1")
    assert [(c.id, c.tool) for c in waiting] == [(pending_id, "AskUserQuestion")]
    answer_question(elsewhere, pending_id, {LIBRARY["question"]: "requests", CHECKS["question"]: "mypy, ruff"},
                    {LIBRARY["question"]: {"notes": "already a dependency"}})
    with pytest.raises(ValueError, match="answered already"):
        answer_question(elsewhere, pending_id, {LIBRARY["question"]: "httpx"})
    # The session's host runs it: the result carries the answers, and nobody is asked again.
    result = await session.pending.resolve(pending_id)
    assert not result.is_error, result.text_content()
    assert f'"{LIBRARY["question"]}" = "requests"' in result.text_content()
    assert "already a dependency" in result.text_content()
    assert result.structured_content["answers"] == {LIBRARY["question"]: "requests",
                                                    CHECKS["question"]: "mypy, ruff"}
    assert host.asked == 1 and session.pending.list() == []


async def test_a_session_in_memory_and_a_declined_question(tmp_path: Path) -> None:
    toolbox = load(tmp_path, Later())
    session = toolbox.session("default")
    first = await session.call("AskUserQuestion", {"questions": [LIBRARY]})
    second = await session.call("AskUserQuestion", {"questions": [CHECKS]})
    answer_question(session, first.structured_content["pending"], {LIBRARY["question"]: "httpx"})
    answered = await session.pending.resolve(first.structured_content["pending"], Answer(allow=True))
    assert answered.structured_content["answers"] == {LIBRARY["question"]: "httpx"}
    declined = await session.pending.resolve(second.structured_content["pending"],
                                             Answer(allow=False, message="the person would rather you chose"))
    assert declined.is_error and "the person would rather you chose" in declined.text_content()
    with pytest.raises(KeyError):
        answer_question(session, "p-nothing", {})


async def test_approved_without_answers_is_an_unanswered_question(tmp_path: Path) -> None:
    host = Later()
    session = load(tmp_path, host).session("default", session_id="asks-2")
    parked = await session.call("AskUserQuestion", {"questions": [LIBRARY]})
    load(tmp_path).answer_pending(parked.structured_content["pending"], Answer(allow=True))  # `approvals approve`
    result = await session.pending.resolve(parked.structured_content["pending"])
    # Asked again (the host parks it again) rather than answered with nothing.
    assert "pending call" in result.text_content() and host.asked == 2

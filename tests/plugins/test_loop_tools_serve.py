"""The loop tools through a real `pegboard serve` (in memory) and the MCP SDK's
Client: AskUserQuestion answered by the client's elicitation callback (single
and multi-select, "Other" with text) and absent for a client that cannot take
a form; EnterPlanMode approved, a Write refused, ExitPlanMode approved, the
Write allowed in the mode picked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.types import ElicitResult  # noqa: E402

from pegboard import Toolbox  # noqa: E402

pytestmark = pytest.mark.anyio

LIBRARY = {"question": "Which HTTP library?", "header": "Library", "multiSelect": False,
           "options": [{"label": "httpx", "description": "async and sync"},
                       {"label": "requests", "description": "sync only"}]}
CHECKS = {"question": "Which checks in CI?", "header": "CI checks", "multiSelect": True,
          "options": [{"label": "mypy", "description": "types"}, {"label": "ruff", "description": "lint"}]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Any, Any, Path]]:
    from pegboard.plugins.mcp._serve import AskingHost, SessionRegistry, build_server

    root = tmp_path / "proj"
    root.mkdir()
    toolbox = Toolbox.load(cwd=root, plugins=["fs", "ask_user", "plan_mode"])
    toolbox.add_host(AskingHost(toolbox), name="mcp-serve")
    registry = SessionRegistry(toolbox, "default", single_connection=True)
    yield build_server(toolbox, registry), registry, root


def forms(*contents: dict[str, Any] | None, seen: list[Any]) -> Any:
    queue = list(contents)

    async def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        content = queue.pop(0) if queue else None
        return ElicitResult(action="decline") if content is None else ElicitResult(action="accept", content=content)

    return callback


async def test_ask_user_question_through_the_clients_form(served: tuple[Any, Any, Path]) -> None:
    server, registry, _ = served
    seen: list[Any] = []
    answers = forms({"q1": "httpx", "q2_1": True, "q2_2": True},
                    {"q1": "Other", "q1_other": "aiohttp", "q2_1": False, "q2_2": False, "q2_other": "bandit"},
                    seen=seen)
    try:
        async with Client(server, mode="legacy", elicitation_callback=answers) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "AskUserQuestion" in tools
            first = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
            assert not first.is_error, first.content[0].text
            assert first.meta["pegboard/structured"]["answers"] == {"Which HTTP library?": "httpx",
                                                           "Which checks in CI?": "mypy, ruff"}
            other = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
            assert other.meta["pegboard/structured"]["answers"] == {"Which HTTP library?": "aiohttp",
                                                           "Which checks in CI?": "bandit"}
        assert "AskUserQuestion asks" in seen[0].message and "httpx: async and sync" in seen[0].message
        assert seen[0].requested_schema["properties"]["q1"]["enum"] == ["httpx", "requests", "Other"]
    finally:
        await registry.aclose()


async def test_a_client_that_cannot_elicit_is_not_offered_it(served: tuple[Any, Any, Path]) -> None:
    server, registry, _ = served
    try:
        async with Client(server, mode="legacy") as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "AskUserQuestion" not in tools and "Read" in tools
            refused = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY]})
            assert refused.is_error and "not offered in this session" in refused.content[0].text
    finally:
        await registry.aclose()


async def test_plan_mode_through_serve(served: tuple[Any, Any, Path]) -> None:
    server, registry, root = served
    seen: list[Any] = []
    target = root / "notes.txt"
    # the EnterPlanMode ask, then the ExitPlanMode form
    answers = forms({"answer": "allow"}, {"mode": "acceptEdits"}, seen=seen)
    try:
        async with Client(server, mode="legacy", elicitation_callback=answers) as client:
            entered = await client.call_tool("EnterPlanMode", {})
            assert not entered.is_error, entered.content[0].text
            assert "EnterPlanMode" in seen[0].message
            refused = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
            assert refused.is_error and "not offered in plan" in refused.content[0].text
            assert "Write" not in {t.name for t in (await client.list_tools()).tools}
            exited = await client.call_tool("ExitPlanMode", {"plan": "1. write notes.txt"})
            assert not exited.is_error and "now in acceptEdits mode" in exited.content[0].text
            assert "1. write notes.txt" in seen[1].message
            written = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
            assert not written.is_error, written.content[0].text
        assert target.read_text() == "x" and len(seen) == 2  # acceptEdits wrote without asking
    finally:
        await registry.aclose()


async def test_the_task_list_through_serve(tmp_path: Path) -> None:
    from pegboard.plugins.mcp._serve import SessionRegistry, build_server

    toolbox = Toolbox.load(cwd=tmp_path, plugins=["todos"])
    registry = SessionRegistry(toolbox, "default", single_connection=True)
    server = build_server(toolbox, registry)
    try:
        async with Client(server, mode="legacy") as client:
            for subject in ("Write the parser", "Release"):
                created = await client.call_tool("TaskCreate", {"subject": subject, "description": subject})
                assert not created.is_error, created.content[0].text
            updated = await client.call_tool("TaskUpdate", {"taskId": "1", "status": "in_progress"})
            assert not updated.is_error, updated.content[0].text
            listed = await client.call_tool("TaskList", {})
            text = listed.content[0].text
            assert "#1 [in_progress] Write the parser" in text and "#2 [pending] Release" in text
    finally:
        await registry.aclose()

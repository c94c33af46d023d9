"""AskUserQuestion through a real `pegboard serve` (in memory) to an MCP SDK
Client of the 2026-07-28 protocol, where a server sends no requests: the
form is an input request of the call (InputRequiredResult), the client's
elicitation callback answers it and the call is retried with the answer;
also after a permission question in the same call. A client of that era
without elicitation is not offered the tool."""

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
MODERN = "2026-07-28"

LIBRARY = {"question": "Which HTTP library?", "header": "Library", "multiSelect": False,
           "options": [{"label": "httpx", "description": "async and sync"},
                       {"label": "requests", "description": "sync only"}]}
CHECKS = {"question": "Which checks in CI?", "header": "CI checks", "multiSelect": True,
          "options": [{"label": "mypy", "description": "types"}, {"label": "ruff", "description": "lint"}]}


def serve(tmp_path: Path, mode: str) -> tuple[Any, Any]:
    from pegboard.plugins.mcp._serve import AskingHost, SessionRegistry, build_server

    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs", "ask_user"])
    toolbox.add_host(AskingHost(toolbox), name="mcp-serve")
    registry = SessionRegistry(toolbox, mode, single_connection=True)
    return build_server(toolbox, registry), registry


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    yield serve(tmp_path, "default")


def forms(*contents: dict[str, Any] | None, seen: list[Any]) -> Any:
    queue = list(contents)

    async def callback(context: Any, params: Any) -> ElicitResult:
        seen.append(params)
        content = queue.pop(0) if queue else None
        return ElicitResult(action="decline") if content is None else ElicitResult(action="accept", content=content)

    return callback


async def test_ask_user_question_by_input_request(served: tuple[Any, Any]) -> None:
    server, registry = served
    seen: list[Any] = []
    answers = forms({"q1": "httpx", "q2_1": True, "q2_2": True},
                    {"q1": "Other", "q1_other": "aiohttp", "q2_1": False, "q2_2": False, "q2_other": "bandit"},
                    None, seen=seen)
    try:
        async with Client(server, mode=MODERN, elicitation_callback=answers) as client:
            assert "AskUserQuestion" in {t.name for t in (await client.list_tools()).tools}
            first = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
            assert not first.is_error, first.content[0].text
            assert first.meta["pegboard/structured"]["answers"] == {"Which HTTP library?": "httpx",
                                                                    "Which checks in CI?": "mypy, ruff"}
            other = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
            assert other.meta["pegboard/structured"]["answers"] == {"Which HTTP library?": "aiohttp",
                                                                    "Which checks in CI?": "bandit"}
            declined = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY]})
            assert not declined.is_error and "did not answer your questions" in declined.content[0].text
        assert len(seen) == 3  # one form per call, answered once
        assert "AskUserQuestion asks" in seen[0].message and "httpx: async and sync" in seen[0].message
        assert seen[0].requested_schema["properties"]["q1"]["enum"] == ["httpx", "requests", "Other"]
    finally:
        await registry.aclose()


async def test_after_a_permission_question_in_the_same_call(tmp_path: Path) -> None:
    server, registry = serve(tmp_path, "ask")  # the `ask` level asks before every call
    seen: list[Any] = []
    answers = forms({"answer": "allow"}, {"q1": "requests"}, seen=seen)
    try:
        async with Client(server, mode=MODERN, elicitation_callback=answers) as client:
            result = await client.call_tool("AskUserQuestion", {"questions": [LIBRARY]})
            assert not result.is_error, result.content[0].text
            assert result.meta["pegboard/structured"]["answers"] == {"Which HTTP library?": "requests"}
        assert [("answer" in s.requested_schema["properties"]) for s in seen] == [True, False]
    finally:
        await registry.aclose()


async def test_a_modern_client_without_elicitation_is_not_offered_it(served: tuple[Any, Any]) -> None:
    server, registry = served
    try:
        async with Client(server, mode=MODERN) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "AskUserQuestion" not in tools and "Read" in tools
    finally:
        await registry.aclose()

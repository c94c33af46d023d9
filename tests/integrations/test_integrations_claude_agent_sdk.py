"""pegboard.integrations.claude_agent_sdk: the in-process server the Claude
Agent SDK builds, driven by the MCP SDK's own in-memory Client, and driven by
the SDK itself with the Claude Code CLI it ships, against a local server that
speaks the Messages API (tests/_model_servers.py)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from _model_servers import model_server, say, use  # noqa: E402
from mcp import Client  # noqa: E402

from pegboard import Answer, Toolbox, hookimpl  # noqa: E402
from pegboard.integrations.claude_agent_sdk import mcp_server  # noqa: E402

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


class LaterHost:
    @hookimpl
    def pegboard_ask(self, request: object, decision: object) -> Answer:
        return Answer.later()


async def test_the_in_process_server_runs_the_session_s_tools(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    (tmp_path / "dot.png").write_bytes(PNG)
    session = Toolbox.load(cwd=tmp_path, plugins=["fs", "schedule"], host=LaterHost()).session("default")
    config = mcp_server(session)
    assert config["type"] == "sdk" and config["name"] == "pegboard"
    async with Client(config["instance"]) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        # Every tool, deferred ones too, and no ToolSearch: the SDK's server cannot say its tools changed.
        assert {"Read", "Write", "Grep", "NotebookEdit", "CronList"} <= names and "ToolSearch" not in names
        scheduled = await client.call_tool("CronList", {})
        assert not scheduled.is_error and "No scheduled jobs" in scheduled.content[0].text
        read = await client.call_tool("Read", {"file_path": str(tmp_path / "a.txt")})
        assert not read.is_error and "alpha" in read.content[0].text
        pair = await asyncio.gather(client.call_tool("Read", {"file_path": str(tmp_path / "b.txt")}),
                                    client.call_tool("Glob", {"pattern": "*.txt"}))
        assert "beta" in pair[0].content[0].text and "a.txt" in pair[1].content[0].text
        image = await client.call_tool("Read", {"file_path": str(tmp_path / "dot.png")})
        assert any(getattr(c, "mime_type", None) == "image/png" for c in image.content), image.content
        error = await client.call_tool("Read", {"file_path": str(tmp_path / "missing.txt")})
        assert error.is_error
        target = tmp_path / "new.txt"
        waiting = await client.call_tool("Write", {"file_path": str(target), "content": "hi\n"})
        assert waiting.is_error and "pending call" in waiting.content[0].text and not target.exists()
    [pending] = session.pending.list()
    result = await session.pending.resolve(pending.id, Answer(allow=True))
    assert not result.is_error and target.read_text() == "hi\n"


def _tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    last = request["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _text(block: dict[str, Any]) -> str:
    content = block.get("content", [])
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


@pytest.mark.slow
async def test_the_sdk_and_the_cli_it_ships_drive_the_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the SDK's query() and the Claude Code CLI it bundles, whose model
    requests go to a local server speaking the Messages API's streamed wire
    format: a Read, a parallel pair, an image, an error, an ask approved later."""
    import os

    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

    for key in list(os.environ):  # the CLI gets this process's environment: none of the machine's model settings
        if key.startswith(("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_")):
            monkeypatch.delenv(key)

    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    (project / "dot.png").write_bytes(PNG)
    target = project / "new.txt"
    home = tmp_path / "home"
    home.mkdir()
    tool = "mcp__pegboard__"
    steps = [
        use((f"{tool}Read", {"file_path": str(project / "a.txt")})),
        use((f"{tool}Read", {"file_path": str(project / "b.txt")}), (f"{tool}Glob", {"pattern": "*.txt"})),
        use((f"{tool}Read", {"file_path": str(project / "dot.png")})),
        use((f"{tool}Read", {"file_path": str(project / "missing.txt")})),
        use((f"{tool}Write", {"file_path": str(target), "content": "hi\n"})),
        say("done"),
    ]
    session = Toolbox.load(cwd=project, plugins=["fs"], host=LaterHost()).session("default")
    with model_server("anthropic", steps) as server:
        options = ClaudeAgentOptions(
            model="test-model", cwd=str(project), mcp_servers={"pegboard": mcp_server(session)}, tools=[],
            allowed_tools=[f"{tool}*"], max_turns=10,
            env={"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key", "HOME": str(home),
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false",
                 "DISABLE_AUTOUPDATER": "1"})
        results = [m async for m in query(prompt="look around", options=options) if isinstance(m, ResultMessage)]
    assert server.problems == [], server.problems
    assert [r.result for r in results] == ["done"]
    requests = [r for r in server.requests if r.get("tools")]
    assert len(requests) == 6, [list(r) for r in server.requests]
    offered = {t["name"] for t in requests[0]["tools"]}
    assert {f"{tool}Read", f"{tool}Write", f"{tool}Glob"} <= offered and "Bash" not in offered  # pegboard's only
    [read] = _tool_results(requests[1])
    assert "alpha" in _text(read) and not read.get("is_error")
    pair = _tool_results(requests[2])
    assert len(pair) == 2 and "beta" in _text(pair[0]) and "a.txt" in _text(pair[1])
    [image] = _tool_results(requests[3])
    assert any(b.get("type") == "image" and b["source"]["media_type"] == "image/png" for b in image["content"])
    [error] = _tool_results(requests[4])
    assert error.get("is_error") is True and "missing.txt" in _text(error)
    [waiting] = _tool_results(requests[5])
    assert "pending call" in _text(waiting) and not target.exists()
    [pending] = session.pending.list()
    result = await session.pending.resolve(pending.id, Answer(allow=True))
    assert not result.is_error and target.read_text() == "hi\n"

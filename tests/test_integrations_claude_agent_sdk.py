"""pegboard.integrations.claude_agent_sdk: the in-process server the Claude
Agent SDK builds, driven by the MCP SDK's own in-memory Client (the Claude
CLI and a model are not needed to check what the server answers)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

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
    session = Toolbox.load(cwd=tmp_path, plugins=["fs"], host=LaterHost()).session("default")
    config = mcp_server(session)
    assert config["type"] == "sdk" and config["name"] == "pegboard"
    async with Client(config["instance"]) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"Read", "Write", "Grep", "ToolSearch"} <= names
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

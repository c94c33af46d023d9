"""pegboard.integrations.langchain, driven by langchain-core's own fake chat
model (no network): a Read, a parallel pair, an image, an error, an ask
approved later."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402

from pegboard import Answer, Toolbox  # noqa: E402
from pegboard.integrations.langchain import tools  # noqa: E402

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


async def run_turn(model: GenericFakeChatModel, by_name: dict[str, Any]) -> list[ToolMessage]:
    """One model reply and its tool calls, side by side, as a LangChain loop runs them."""
    reply = await model.ainvoke("go")
    assert isinstance(reply, AIMessage)
    return list(await asyncio.gather(*(by_name[c["name"]].ainvoke(c) for c in reply.tool_calls)))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    (tmp_path / "dot.png").write_bytes(PNG)
    return tmp_path


async def test_reads_in_parallel_images_and_errors(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    by_name = {t.name: t for t in tools(session)}
    assert "Read" in by_name and "ToolSearch" in by_name  # deferred tools through ToolSearch
    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", tool_calls=[call("Read", {"file_path": str(project / "a.txt")}, "r1")]),
        AIMessage(content="", tool_calls=[call("Read", {"file_path": str(project / "a.txt")}, "p1"),
                                          call("Grep", {"pattern": "beta", "path": str(project)}, "p2")]),
        AIMessage(content="", tool_calls=[call("Read", {"file_path": str(project / "dot.png")}, "img")]),
        AIMessage(content="", tool_calls=[call("Read", {"file_path": str(project / "missing.txt")}, "err")]),
    ]))
    [read] = await run_turn(model, by_name)
    assert read.tool_call_id == "r1" and "alpha" in read.content and read.status == "success"
    pair = await run_turn(model, by_name)
    assert [m.tool_call_id for m in pair] == ["p1", "p2"] and "b.txt" in pair[1].content
    [image] = await run_turn(model, by_name)
    assert any(isinstance(b, dict) and b.get("type") == "image" and b["mime_type"] == "image/png"
               and base64.b64decode(b["base64"]) == PNG for b in image.content)
    [error] = await run_turn(model, by_name)
    assert error.status == "error" and "missing.txt" in error.content


async def test_an_ask_waits_as_a_pending_call_and_runs_when_approved(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    by_name = {t.name: t for t in tools(session)}
    target = project / "new.txt"
    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", tool_calls=[call("Write", {"file_path": str(target), "content": "hi\n"}, "w1")])]))
    [waiting] = await run_turn(model, by_name)
    assert waiting.status == "error" and "pending call" in waiting.content and not target.exists()
    [pending] = session.pending.list()
    result = await session.pending.resolve(pending.id, Answer(allow=True))
    assert not result.is_error and target.read_text() == "hi\n"

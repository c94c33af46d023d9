"""pegboard.integrations.pydantic_ai, driven by pydantic-ai's own FunctionModel
(no network): a Read, a parallel pair, an image, an error, an ask approved
later, and a denial."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from pegboard import Toolbox  # noqa: E402
from pegboard.integrations.pydantic_ai import PegboardToolset  # noqa: E402

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


class Script:
    """A model that answers with prepared tool calls, one reply per request,
    and keeps what it was sent."""

    def __init__(self, *replies: list[ToolCallPart]):
        self.replies = list(replies)
        self.seen: list[list[ModelMessage]] = []
        self.tools: list[Any] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.tools = info.function_tools
        if self.replies:
            return ModelResponse(parts=self.replies.pop(0))
        return ModelResponse(parts=[TextPart("done")])

    def returns(self) -> dict[str, Any]:
        """Every tool return the model was sent, by tool call id."""
        out = {}
        for message in self.seen[-1]:
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart):
                    out[part.tool_call_id] = part.content
        return out


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    (tmp_path / "dot.png").write_bytes(PNG)
    return tmp_path


@pytest.mark.slow
async def test_reads_in_parallel_images_and_errors(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    script = Script(
        [call("Read", {"file_path": str(project / "a.txt")}, "r1")],
        [call("Read", {"file_path": str(project / "a.txt")}, "p1"),
         call("Grep", {"pattern": "beta", "path": str(project)}, "p2")],
        [call("Read", {"file_path": str(project / "dot.png")}, "img")],
        [call("Read", {"file_path": str(project / "missing.txt")}, "err")],
    )
    agent = Agent(FunctionModel(script), toolsets=[PegboardToolset(session)])
    result = await agent.run("look around")
    assert result.output == "done"
    by_name = {t.name: t for t in script.tools}
    assert by_name["Read"].sequential is False and by_name["Write"].sequential is True
    # Deferred tools are pydantic-ai's to surface (its own tool search): not sent up front.
    assert "ToolSearch" not in by_name and "NotebookEdit" not in by_name, sorted(by_name)
    returns = {}
    for messages in script.seen:
        for message in messages:
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart):
                    returns[part.tool_call_id] = part.content
    assert "alpha" in returns["r1"]
    assert "alpha" in returns["p1"] and "b.txt" in returns["p2"]
    image = returns["img"]
    assert any(getattr(p, "media_type", None) == "image/png" and p.data == PNG for p in image)
    assert "missing.txt" in returns["err"]


async def test_an_ask_becomes_an_approval_request_approved_later(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    target = project / "new.txt"
    script = Script([call("Write", {"file_path": str(target), "content": "hi\n"}, "w1")])
    agent = Agent(FunctionModel(script), toolsets=[PegboardToolset(session)],
                  output_type=[str, DeferredToolRequests])
    first = await agent.run("write it")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert [a.tool_call_id for a in requests.approvals] == ["w1"] and not target.exists()
    assert requests.metadata["w1"]["suggestions"]  # the rule an "always" answer would keep
    # Later (another request of the host's, after a person said yes):
    second = await agent.run(message_history=first.all_messages(),
                             deferred_tool_results=DeferredToolResults(approvals={"w1": True},
                                                                       metadata={"w1": {"remember": "session"}}),
                             output_type=[str, DeferredToolRequests])
    assert second.output == "done"
    assert target.read_text() == "hi\n"
    assert (await session.decide("Write", {"file_path": str(project / "other.txt"), "content": ""})).decision \
        == "allow"  # remembered for the session


async def test_a_denied_approval_tells_the_model_and_runs_nothing(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    target = project / "new.txt"
    script = Script([call("Write", {"file_path": str(target), "content": "hi\n"}, "w1")])
    agent = Agent(FunctionModel(script), toolsets=[PegboardToolset(session)],
                  output_type=[str, DeferredToolRequests])
    first = await agent.run("write it")
    denied = DeferredToolResults(approvals={"w1": ToolDenied("Not in this folder.")})
    await agent.run(message_history=first.all_messages(), deferred_tool_results=denied,
                    output_type=[str, DeferredToolRequests])
    assert not target.exists()
    assert "Not in this folder." in str(script.returns()["w1"])


async def test_a_tool_loaded_by_tool_search_is_called_next(project: Path) -> None:
    """pydantic-ai's own tool search loads a deferred tool; the next request
    offers it and the call runs (the toolset is asked before each request)."""
    session = Toolbox.load(cwd=project, plugins=["fs", "schedule"]).session("default")
    script = Script([call("search_tools", {"queries": ["CronList scheduled jobs"]}, "s1")],
                    [call("CronList", {}, "c1")])
    agent = Agent(FunctionModel(script), toolsets=[PegboardToolset(session)])
    assert (await agent.run("what is scheduled?")).output == "done"
    assert "No scheduled jobs" in str(script.returns()["c1"])


def _pydantic_model(api: str, url: str) -> Any:
    if api == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel("test-model", provider=AnthropicProvider(base_url=url, api_key="test-key"))
    from pydantic_ai.providers.openai import OpenAIProvider

    if api == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel

        return OpenAIChatModel("test-model", provider=OpenAIProvider(base_url=url, api_key="test-key"))
    from pydantic_ai.models.openai import OpenAIResponsesModel

    return OpenAIResponsesModel("test-model", provider=OpenAIProvider(base_url=url, api_key="test-key"))


@pytest.mark.slow
@pytest.mark.parametrize("api", ["anthropic", "openai", "responses"])
async def test_images_and_errors_on_each_wire(project: Path, api: str) -> None:
    """pydantic-ai's own models against local servers speaking each API
    (tests/_model_servers.py, which checks every request against the SDK's
    types): an image Read is a valid request, and a failed call carries the
    error flag where the API has one (Anthropic's ``is_error``)."""
    from _model_servers import model_server, say, use

    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    steps = [use(("Read", {"file_path": str(project / "dot.png")})),
             use(("Read", {"file_path": str(project / "missing.txt")})), say("done")]
    with model_server(api, steps) as server:
        agent = Agent(_pydantic_model(api, server.url), toolsets=[PegboardToolset(session)])
        assert (await agent.run("look")).output == "done"
    assert server.problems == [], server.problems
    image_request, error_request = server.requests[1], server.requests[2]
    if api == "anthropic":
        blocks = [b for m in image_request["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
        assert any(b.get("type") == "image" or any(c.get("type") == "image" for c in b.get("content", []) or []
                                                   if isinstance(c, dict)) for b in blocks), blocks
        results = [b for b in error_request["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert results[-1]["is_error"] is True
    elif api == "openai":
        users = [m for m in image_request["messages"] if m["role"] == "user" and isinstance(m["content"], list)]
        assert any(p.get("type") == "image_url" for m in users for p in m["content"]), image_request["messages"]
        tools = [m for m in image_request["messages"] if m["role"] == "tool"]
        assert all(isinstance(m["content"], str) or all(p.get("type") == "text" for p in m["content"])
                   for m in tools)
    else:
        text = str(image_request["input"])
        assert "input_image" in text
    assert "missing.txt" in str(error_request)


@pytest.mark.slow
async def test_a_command_s_lines_reach_the_run_s_event_stream(project: Path) -> None:
    import shutil

    from pegboard.integrations.pydantic_ai import PegboardOutput

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    session = Toolbox.load(cwd=project, plugins=["shell"]).session("bypassPermissions")
    script = Script([call("Bash", {"command": "echo one; echo two"}, "b1")])
    agent = Agent(FunctionModel(script), toolsets=[PegboardToolset(session)])
    seen: list[Any] = []
    async with agent.iter("run it") as run:
        async for node in run:
            if Agent.is_call_tools_node(node):
                async with node.stream(run.ctx) as events:
                    async for event in events:
                        if isinstance(event, PegboardOutput):
                            seen.append((event.text, event.kind, event.tool_call_id))
    assert run.result is not None and run.result.output == "done"
    assert seen == [("one", "bash.line", "b1"), ("two", "bash.line", "b1")]
    await session.aclose()

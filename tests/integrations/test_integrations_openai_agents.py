"""pegboard.integrations.openai_agents, driven through the Agents SDK's Runner
by a scripted model implementing the SDK's Model interface (no network): a
Read, a parallel pair, an image, an error, an ask approved later, a rejection."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from pegboard import Toolbox  # noqa: E402
from pegboard.integrations.openai_agents import function_tools  # noqa: E402

pytestmark = pytest.mark.anyio
set_tracing_disabled(True)  # no trace export: nothing leaves the machine

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


def call(name: str, args: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", name=name, arguments=json.dumps(args), call_id=call_id,
                                    id=f"fc_{call_id}", status="completed")


DONE = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed",
                             content=[ResponseOutputText(type="output_text", text="done", annotations=[])])


class ScriptedModel(Model):
    """Answers each request with the next prepared list of tool calls, then
    "done"; keeps the inputs and tools it was given."""

    def __init__(self, *replies: list[ResponseFunctionToolCall]):
        self.replies = list(replies)
        self.inputs: list[Any] = []
        self.tools: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                           output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        self.tools = tools
        output = self.replies.pop(0) if self.replies else [DONE]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError

    def outputs(self) -> dict[str, Any]:
        """Every function_call_output the model was sent, by call id."""
        found = {}
        for items in self.inputs:
            for item in items if isinstance(items, list) else []:
                data = item if isinstance(item, dict) else item.model_dump()
                if data.get("type") == "function_call_output":
                    found[data["call_id"]] = data["output"]
        return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    (tmp_path / "dot.png").write_bytes(PNG)
    return tmp_path


async def test_reads_in_parallel_images_and_errors(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    model = ScriptedModel(
        [call("Read", {"file_path": str(project / "a.txt")}, "r1")],
        [call("Read", {"file_path": str(project / "a.txt"), "offset": None, "limit": None}, "p1"),
         call("Grep", {"pattern": "beta", "path": str(project)}, "p2")],
        [call("Read", {"file_path": str(project / "dot.png")}, "img")],
        [call("Read", {"file_path": str(project / "missing.txt")}, "err")],
    )
    agent = Agent(name="t", model=model, tools=function_tools(session))
    result = await Runner.run(agent, "look around")
    assert result.final_output == "done"
    tools = {t.name: t for t in model.tools}
    assert tools["Read"].strict_json_schema is True
    assert tools["NotebookEdit"].defer_loading is True and "ToolSearch" not in tools
    outputs = model.outputs()
    assert "alpha" in str(outputs["r1"]) and "alpha" in str(outputs["p1"]) and "b.txt" in str(outputs["p2"])
    image = outputs["img"]
    assert isinstance(image, list) and any(p.get("type") == "input_image" for p in image), image
    assert "missing.txt" in str(outputs["err"])


async def test_an_ask_interrupts_the_run_and_runs_once_approved(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    target = project / "new.txt"
    model = ScriptedModel([call("Write", {"file_path": str(target), "content": "hi\n"}, "w1")])
    agent = Agent(name="t", model=model, tools=function_tools(session))
    first = await Runner.run(agent, "write it")
    assert [i.raw_item.call_id for i in first.interruptions] == ["w1"] and not target.exists()
    state = first.to_state()
    state.approve(first.interruptions[0])
    second = await Runner.run(agent, state)
    assert second.final_output == "done"
    assert target.read_text() == "hi\n"


async def test_a_rejected_call_runs_nothing(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    target = project / "new.txt"
    model = ScriptedModel([call("Write", {"file_path": str(target), "content": "hi\n"}, "w1")])
    agent = Agent(name="t", model=model, tools=function_tools(session))
    first = await Runner.run(agent, "write it")
    state = first.to_state()
    state.reject(first.interruptions[0])
    await Runner.run(agent, state)
    assert not target.exists()
    assert "w1" in model.outputs()


async def test_a_denied_call_is_refused_without_asking(project: Path) -> None:
    (project / ".pegboard").mkdir()
    (project / ".pegboard" / "config.toml").write_text('[permissions]\ndeny = ["Write"]\n')
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    model = ScriptedModel([call("Write", {"file_path": str(project / "x.txt"), "content": "x"}, "w1")])
    result = await Runner.run(Agent(name="t", model=model, tools=function_tools(session)), "write it")
    assert not result.interruptions and result.final_output == "done"
    assert "denied by Write" in str(model.outputs()["w1"])


@pytest.mark.slow
async def test_over_the_responses_api_wire(project: Path) -> None:
    """The SDK's own OpenAIResponsesModel against a local server speaking the
    Responses API (tests/_model_servers.py): the request the SDK builds from
    the tools (strict schemas, deferred tools and the hosted tool search) is
    checked against the openai SDK's types, as is every reply."""
    from openai import AsyncOpenAI

    from _model_servers import model_server, say, use
    from agents import OpenAIResponsesModel

    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    target = project / "new.txt"
    steps = [
        use(("Read", {"file_path": str(project / "a.txt")})),
        use(("Read", {"file_path": str(project / "b.txt"), "offset": None, "limit": None}),
            ("Grep", {"pattern": "beta", "path": str(project)})),
        use(("Read", {"file_path": str(project / "dot.png")})),
        use(("Read", {"file_path": str(project / "missing.txt")})),
        use(("Write", {"file_path": str(target), "content": "hi\n"})),
        say("done"),
    ]
    with model_server("responses", steps) as server:
        model = OpenAIResponsesModel(model="test-model",
                                     openai_client=AsyncOpenAI(base_url=server.url, api_key="test-key"))
        agent = Agent(name="t", model=model, tools=function_tools(session))
        first = await Runner.run(agent, "look around")
        assert [i.tool_name for i in first.interruptions] == ["Write"] and not target.exists()
        state = first.to_state()
        state.approve(first.interruptions[0])  # later, in another run, once a person said yes
        second = await Runner.run(agent, state)
    assert server.problems == [], server.problems
    assert second.final_output == "done" and target.read_text() == "hi\n"
    tools = {t.get("name") or t["type"]: t for t in server.requests[0]["tools"]}
    assert tools["Read"]["strict"] is True and tools["NotebookEdit"]["defer_loading"] is True
    assert "tool_search" in tools and "ToolSearch" not in tools
    items = server.requests[-1]["input"]
    calls = {i["call_id"]: (i["name"], json.loads(i["arguments"])) for i in items if i.get("type") == "function_call"}
    outputs = {calls[i["call_id"]][0] + ":" + Path(calls[i["call_id"]][1].get("file_path", "grep")).name: i["output"]
               for i in items if i.get("type") == "function_call_output"}
    assert "alpha" in str(outputs["Read:a.txt"]) and "beta" in str(outputs["Read:b.txt"])
    assert "b.txt" in str(outputs["Grep:grep"])
    assert any(p.get("type") == "input_image" for p in outputs["Read:dot.png"]), outputs["Read:dot.png"]
    assert "missing.txt" in str(outputs["Read:missing.txt"])
    assert "new.txt" in str(outputs["Write:new.txt"])


@pytest.mark.slow
async def test_on_chat_completions_tool_search_loads_and_images_follow(project: Path) -> None:
    """A Chat Completions model (no hosted tool search): pegboard's ToolSearch
    loads CronList and the next request offers it and runs it; an image Read
    reaches the model in a user message after the tool messages
    (``images_after_tool_outputs``), every request valid for the API."""
    from openai import AsyncOpenAI

    from _model_servers import model_server, say, use
    from agents import OpenAIChatCompletionsModel, RunConfig

    from pegboard.integrations.openai_agents import images_after_tool_outputs

    session = Toolbox.load(cwd=project, plugins=["fs", "schedule"]).session("default")
    steps = [use(("ToolSearch", {"query": "select:CronList"})), use(("CronList", {})),
             use(("Read", {"file_path": str(project / "dot.png")})), say("done")]
    with model_server("openai", steps) as server:
        chat = OpenAIChatCompletionsModel(model="test-model",
                                          openai_client=AsyncOpenAI(base_url=server.url, api_key="test-key"))
        agent = Agent(name="t", model=chat, tools=function_tools(session, defer_loading=False))
        result = await Runner.run(agent, "look", run_config=RunConfig(call_model_input_filter=images_after_tool_outputs))
    assert server.problems == [], server.problems
    assert result.final_output == "done"
    offered = [{t["function"]["name"] for t in r.get("tools", [])} for r in server.requests]
    assert "ToolSearch" in offered[0] and "CronList" not in offered[0] and "CronList" in offered[1]
    messages = server.requests[3]["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert "No scheduled jobs" in str(tool_messages[1]["content"])
    assert messages[-2]["role"] == "tool" and messages[-1]["role"] == "user"
    assert any(p.get("type") == "image_url" for p in messages[-1]["content"]), messages[-1]

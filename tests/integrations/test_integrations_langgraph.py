"""pegboard.integrations.langchain with LangGraph's prebuilt agent and real
chat models (ChatAnthropic, ChatOpenAI on Chat Completions and on the
Responses API) against local servers speaking each API's wire format
(tests/_model_servers.py checks every request against the SDK's types):
a ToolSearch then a call of the tool it loaded, an image Read, a failed
call's error flag; and a tool invoked synchronously."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_anthropic")
pytest.importorskip("langchain_openai")

from _model_servers import model_server, say, use  # noqa: E402
from langchain_core.messages import ToolMessage  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402

from pegboard import Toolbox  # noqa: E402
from pegboard.integrations.langchain import model, tool_node, tools  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:create_react_agent has been moved")]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


def chat(api: str, url: str) -> Any:
    if api == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(model="test-model", base_url=url, api_key="test-key", max_retries=0)  # type: ignore[call-arg]
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="test-model", base_url=url, api_key="test-key", max_retries=0,  # type: ignore[arg-type]
                      use_responses_api=api == "responses")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "dot.png").write_bytes(PNG)
    return tmp_path


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_tool_tool_search_loaded_is_offered_and_runs(project: Path, api: str) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs", "schedule"]).session("default")
    steps = [use(("ToolSearch", {"query": "select:CronList"})), use(("CronList", {})), say("done")]
    with model_server(api, steps) as server:
        agent = create_react_agent(model(session, chat(api, server.url)), tool_node(session))
        state = await agent.ainvoke({"messages": [("user", "what is scheduled?")]})
    assert server.problems == [], server.problems

    def offered(request: dict[str, Any]) -> set[str]:
        return {t.get("name") or t.get("function", {}).get("name") for t in request.get("tools", [])}

    assert "CronList" not in offered(server.requests[0]) and "CronList" in offered(server.requests[1])
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["success", "success"]
    assert "No scheduled jobs" in str(results[1].content)


@pytest.mark.parametrize("api", ["anthropic", "openai", "responses"])
async def test_an_image_read_is_a_valid_request_and_errors_are_flagged(project: Path, api: str) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    steps = [use(("Read", {"file_path": str(project / "dot.png")})),
             use(("Read", {"file_path": str(project / "missing.txt")})), say("done")]
    with model_server(api, steps) as server:
        agent = create_react_agent(model(session, chat(api, server.url), images_after_tools=api == "openai"),
                                   tool_node(session))
        await agent.ainvoke({"messages": [("user", "look")]})
    assert server.problems == [], server.problems
    image_request, error_request = server.requests[1], server.requests[2]
    if api == "anthropic":
        [result] = [b for b in image_request["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert any(b.get("type") == "image" for b in result["content"]), result
        [failed] = [b for b in error_request["messages"][-1]["content"] if b.get("type") == "tool_result"]
        assert failed.get("is_error") is True
    elif api == "openai":
        messages = image_request["messages"]
        assert messages[-2]["role"] == "tool" and isinstance(messages[-2]["content"], str)
        assert messages[-1]["role"] == "user"
        assert any(p.get("type") == "image_url" for p in messages[-1]["content"]), messages[-1]
    else:
        [output] = [i for i in image_request["input"] if i.get("type") == "function_call_output"]
        assert any(p.get("type") == "input_image" for p in output["output"]), output
    assert "missing.txt" in str(error_request)


def test_a_tool_invoked_synchronously_runs(project: Path) -> None:
    session = Toolbox.load(cwd=project, plugins=["fs"]).session("default")
    (project / "a.txt").write_text("alpha\n")
    read = {t.name: t for t in tools(session)}["Read"]
    message = read.invoke({"name": "Read", "args": {"file_path": str(project / "a.txt")}, "id": "r1",
                           "type": "tool_call"})
    assert isinstance(message, ToolMessage) and "alpha" in str(message.content)
    session.sync.close()




async def test_a_command_s_lines_are_custom_events_and_the_graph_s_custom_stream(project: Path) -> None:
    import shutil

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    session = Toolbox.load(cwd=project, plugins=["shell"]).session("bypassPermissions")
    steps = [use(("Bash", {"command": "echo one; echo two"})), say("done")]
    with model_server("anthropic", steps) as server:
        agent = create_react_agent(model(session, chat("anthropic", server.url)), tool_node(session))
        custom = [chunk async for chunk in agent.astream({"messages": [("user", "go")]}, stream_mode="custom")]
    assert [c["pegboard_output"]["text"] for c in custom] == ["one", "two"]
    steps = [use(("Bash", {"command": "echo three"})), say("done")]
    with model_server("anthropic", steps) as server:
        agent = create_react_agent(model(session, chat("anthropic", server.url)), tool_node(session))
        events = [e async for e in agent.astream_events({"messages": [("user", "go")]}, version="v2")
                  if e["event"] == "on_custom_event" and e["name"] == "pegboard_output"]
    assert [e["data"]["text"] for e in events] == ["three"]
    await session.aclose()

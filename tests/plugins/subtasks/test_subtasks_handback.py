"""SubagentHandback: offered only to a sub-agent in auto mode; its report
reaches the caller and the child's run ends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _subtasks_host import ScriptedHost, load, project

from pegboard import Vote, hookimpl

pytestmark = pytest.mark.anyio


class Classifying(ScriptedHost):
    """Auto mode's classifier, allowing what it is shown (and recording it)."""

    classified: list[str]

    @hookimpl
    def pegboard_classify(self, request: Any, decision: Any) -> Vote:
        self.classified.append(request.tool.name)
        return Vote.allow("the test's classifier allows it")


async def test_the_report_reaches_the_caller_and_the_run_ends(tmp_path: Path) -> None:
    reached: list[str] = []
    offered: list[list[str]] = []

    async def hand_back(run: Any) -> str:
        offered.append(run.session.catalogue().names())
        result = await run.session.call("SubagentHandback", {"message": "Found 3 callers of parse() in src/."})
        reached.append(result.text_content())
        await asyncio.Event().wait()  # a loop that would go on forever: the handback ends it
        reached.append("went on")
        return "not this report"

    host = Classifying({"handback": hand_back})
    host.classified = []
    session = load(project(tmp_path), host).session("auto")
    assert "SubagentHandback" not in session.catalogue().names()  # a top-level session has no caller
    result = await asyncio.wait_for(session.call("Agent", {"description": "find callers", "prompt": "handback: go",
                                                           "run_in_background": False}), 60)
    assert not result.is_error, result.text_content()
    assert "Found 3 callers of parse() in src/." in result.text_content()
    assert "not this report" not in result.text_content()
    assert "SubagentHandback" in offered[0]
    assert reached == ["Your report was handed to the agent that started you, and your run ends here."]
    assert "SubagentHandback" in host.classified  # the classifier reviews it in auto
    run = host.runs[0]
    assert run.handback == "Found 3 callers of parse() in src/." and run.handed_back.is_set()


async def test_not_offered_to_a_sub_agent_outside_auto(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    async def look(run: Any) -> str:
        seen.append(run.session.catalogue().names())
        refused = await run.session.call("SubagentHandback", {"message": "x"})
        return refused.text_content()

    host = ScriptedHost({"look": look})
    session = load(project(tmp_path), host).session("default")
    result = await session.call("Agent", {"description": "look", "prompt": "look: around", "run_in_background": False})
    assert "SubagentHandback" not in seen[0]
    assert "not offered in this session" in result.text_content()


def test_the_schema_is_as_models_know_it(tmp_path: Path) -> None:
    tool = load(project(tmp_path)).tools["SubagentHandback"]
    assert tool.schema["required"] == ["message"] and set(tool.schema["properties"]) == {"message"}


@pytest.mark.slow
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_the_reference_runner_ends_at_the_handback(api: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from _model_servers import model_server, say, use
    from test_subtasks_runners import configure

    class Classifier:
        @hookimpl
        def pegboard_classify(self, request: Any, decision: Any) -> Vote:
            return Vote.allow("the test's classifier allows it")

    steps = [use(("SubagentHandback", {"message": "The parser has two callers."})),
             say("a turn that must never be asked for")]
    with model_server(api, steps) as server:
        configure(server, monkeypatch)
        session = load(project(tmp_path), Classifier()).session("auto")
        result = await session.call("Agent", {"description": "look", "prompt": "Find the callers.",
                                              "run_in_background": False})
    assert server.problems == []
    assert "The parser has two callers." in result.text_content()
    assert len(server.requests) == 1  # no model turn after the handback

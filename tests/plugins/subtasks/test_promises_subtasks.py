"""Issue 29's sub-agent promise: an agent definition's ``maxTurns`` is capped
by the configured ``max_turns`` (a definition, a trusted project's included,
may ask for fewer turns, never more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _model_servers import model_server, use
from _subtasks_host import ScriptedHost, load, project
from _trusted import trust
from pegboard.paths import config_dir

pytestmark = pytest.mark.anyio


def write_agent(folder: Path, name: str, max_turns: int | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    turns = f"maxTurns: {max_turns}\n" if max_turns is not None else ""
    (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: Does things.\n{turns}---\nYou are {name}.\n",
                                       encoding="utf-8")


async def _turns_given(root: Path, agent_type: str) -> int:
    seen: dict[str, Any] = {}

    async def inspect(run: Any) -> str:
        seen["max_turns"] = run.max_turns
        return "done"

    session = load(root, ScriptedHost({"inspect": inspect})).session("bypassPermissions")
    result = await session.call("Agent", {"description": "x", "prompt": "inspect: go", "subagent_type": agent_type,
                                          "run_in_background": False})
    assert "done" in result.text_content(), result.text_content()
    return int(seen["max_turns"])


async def test_a_definitions_max_turns_is_capped_by_the_configured_max_turns(tmp_path: Path) -> None:
    root = project(tmp_path, user="[plugins.subtasks]\nmax_turns = 4\n")
    agents = config_dir() / "agents"
    write_agent(agents, "greedy", 20)
    write_agent(agents, "modest", 2)
    write_agent(agents, "silent", None)
    assert await _turns_given(root, "greedy") == 4
    assert await _turns_given(root, "modest") == 2
    assert await _turns_given(root, "silent") == 4


async def test_a_trusted_projects_definition_is_capped_too(tmp_path: Path) -> None:
    root = project(tmp_path, user="[plugins.subtasks]\nmax_turns = 3\n")
    trust(root)
    write_agent(root / ".pegboard" / "agents", "projects-own", 1000)
    assert await _turns_given(root, "projects-own") == 3


@pytest.mark.slow
async def test_the_runner_stops_at_the_cap_not_at_the_definitions_max_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    write_agent(config_dir() / "agents", "greedy", 20)
    again = use(("Glob", {"pattern": "*"}), text="Still looking.")
    with model_server("anthropic", [again] * 6) as server:
        path = config_dir() / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[plugins.subtasks]\nrunner = "anthropic"\nmodel = "test-model"\nbase_url = "{server.url}"\n'
                        "backoff_s = 0.01\nmax_turns = 2\n", encoding="utf-8")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        result = await load(root).session("default").call(
            "Agent", {"description": "look", "prompt": "go on", "subagent_type": "greedy", "run_in_background": False})
    assert len(server.requests) == 2
    assert "It stopped after 2 model turns (its max_turns)" in result.text_content()

"""Issue 33, item 8 (5 of the brief): an agent file's ``tools:`` means
exactly those tools, as in Claude Code's agent files: an agent given
``Read, Grep`` gets Read and Grep, none of the core's scratchpad and task
tools unless it lists them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _subtasks_host import ScriptedHost, load, project
from pegboard.paths import config_dir

pytestmark = pytest.mark.anyio


async def report_tools(run: Any) -> str:
    return ",".join(sorted(t.name for t in run.session.offered()))


def agent_file(tools: str) -> None:
    folder = config_dir() / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "triager.md").write_text(f"---\nname: triager\ndescription: Sorts tickets.\ntools: {tools}\n---\n"
                                       "You sort tickets.\n")


@pytest.mark.parametrize(("tools", "expected"), [
    ("Read, Grep", "Grep,Read"),
    ("Read, Grep, ScratchpadRead, TaskOutput", "Grep,Read,ScratchpadRead,TaskOutput"),
    ("Read, NotebookEdit", "NotebookEdit,Read,ToolSearch"),  # NotebookEdit is deferred: ToolSearch loads it
])
async def test_tools_means_exactly_those(tools: str, expected: str, tmp_path: Path) -> None:
    root = project(tmp_path)
    agent_file(tools)
    host = ScriptedHost({"tools": report_tools})
    session = load(root, host).session("bypassPermissions")
    result = await session.call("Agent", {"description": "a task", "prompt": "tools: x",
                                          "subagent_type": "triager", "run_in_background": False})
    assert not result.is_error, result.text_content()
    assert expected in result.text_content().splitlines(), result.text_content()

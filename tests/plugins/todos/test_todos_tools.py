"""The todos plugin: TaskCreate, TaskGet, TaskUpdate, TaskList (and the
TodoWrite style), in memory and in a durable session resumed from another
process; the core's TaskList giving way to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio


def load(root: Path, host: ScriptedHost | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["todos"], host=host)


async def test_create_two_update_one_and_list_both(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = load(tmp_path, host).session("default")
    first = await session.call("TaskCreate", {"subject": "Write the parser", "description": "a parser",
                                              "activeForm": "Writing the parser"})
    assert not first.is_error, first.text_content()
    assert "Created task #1: Write the parser" in first.text_content()
    second = await session.call("TaskCreate", {"subject": "Release", "description": "tag and upload",
                                               "metadata": {"priority": "high"}})
    assert "#2 [pending] Release" in second.text_content()
    updated = await session.call("TaskUpdate", {"taskId": "1", "status": "in_progress", "owner": "main",
                                                "addBlocks": ["2"]})
    assert not updated.is_error, updated.text_content()
    listed = (await session.call("TaskList", {})).text_content()
    assert "#1 [in_progress] Write the parser (owner: main)" in listed
    assert "#2 [pending] Release [blocked by #1]" in listed
    got = await session.call("TaskGet", {"taskId": "2"})
    assert "blocked by: #1" in got.text_content() and "priority" in got.text_content()
    done = await session.call("TaskUpdate", {"taskId": "1", "status": "completed"})
    assert "#2 [pending] Release\n" in done.text_content() + "\n"  # its blocker is done
    assert "(1 of 2 completed)" in done.text_content()
    changes = host.events_of("todos.changed")
    assert len(changes) == 4 and [t["status"] for t in changes[-1]["tasks"]] == ["completed", "pending"]
    assert host.asks == []  # allowed without asking


async def test_a_wrong_update_changes_nothing_and_says_why(tmp_path: Path) -> None:
    session = load(tmp_path).session("default")
    await session.call("TaskCreate", {"subject": "One", "description": "d"})
    missing = await session.call("TaskUpdate", {"taskId": "7", "status": "completed"})
    assert missing.is_error and "There is no task #7 (tasks: #1)" in missing.text_content()
    itself = await session.call("TaskUpdate", {"taskId": "1", "subject": "Renamed", "addBlockedBy": ["1"]})
    assert itself.is_error and "cannot block itself" in itself.text_content()
    assert "#1 [pending] One" in (await session.call("TaskList", {})).text_content()
    bad = await session.call("TaskUpdate", {"taskId": "1", "status": "finished"})
    assert bad.is_error
    gone = await session.call("TaskUpdate", {"taskId": "1", "status": "deleted"})
    assert "Deleted task #1" in gone.text_content() and "The task list is empty." in gone.text_content()


async def test_the_list_survives_a_resumed_durable_session(tmp_path: Path, store_url: str) -> None:
    first = load(tmp_path).session("default", session_id="todo-conv")
    await first.call("TaskCreate", {"subject": "Alpha", "description": "a"})
    await first.call("TaskCreate", {"subject": "Beta", "description": "b"})
    await first.aclose()
    again = load(tmp_path).session("default", session_id="todo-conv")
    assert again.resumed
    await again.call("TaskUpdate", {"taskId": "2", "status": "completed"})
    listed = (await again.call("TaskList", {})).text_content()
    assert "#1 [pending] Alpha" in listed and "#2 [completed] Beta" in listed
    # another session keeps its own list
    other = (await load(tmp_path).session("default", session_id="other-conv").call("TaskList", {}))
    assert "The task list is empty." in other.text_content()


def _pegboard_call(root: Path, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([str(Path(sys.executable).parent / "pegboard"), "call", tool, "--session", "cli-todos",
                           "--input", json.dumps(payload), "--json", "--cwd", str(root)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PEGBOARD_PLUGINS": "todos"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_list_survives_pegboard_call_sessions_in_separate_processes(tmp_path: Path) -> None:
    _pegboard_call(tmp_path, "TaskCreate", {"subject": "Alpha", "description": "a"})
    _pegboard_call(tmp_path, "TaskCreate", {"subject": "Beta", "description": "b"})
    _pegboard_call(tmp_path, "TaskUpdate", {"taskId": "1", "status": "in_progress"})
    listed = _pegboard_call(tmp_path, "TaskList", {})
    text = json.dumps(listed)
    assert "#1 [in_progress] Alpha" in text and "#2 [pending] Beta" in text


async def test_the_todowrite_style(tmp_path: Path, user_config: Any) -> None:
    user_config('[plugins.todos]\nstyle = "todowrite"\n')
    host = ScriptedHost()
    toolbox = load(tmp_path, host)
    session = toolbox.session("default")
    names = session.catalogue().names()
    assert "TodoWrite" in names and "TaskCreate" not in names  # both styles registered, this one offered
    todos = [{"content": "Run the tests", "status": "in_progress", "activeForm": "Running the tests"},
             {"content": "Fix the bug", "status": "pending", "activeForm": "Fixing the bug"}]
    result = await session.call("TodoWrite", {"todos": todos})
    assert not result.is_error, result.text_content()
    assert "0 completed, 1 in progress, 1 pending" in result.text_content()
    assert "[~] Running the tests" in result.text_content()
    assert host.events_of("todos.changed")[-1]["todos"] == todos
    wrong = await session.call("TodoWrite", {"todos": [{"content": "x", "status": "doing", "activeForm": "x"}]})
    assert wrong.is_error
    schema = toolbox.tools["TodoWrite"].schema
    item = schema["properties"]["todos"]["items"]
    item = schema["$defs"][item["$ref"].rsplit("/", 1)[1]] if "$ref" in item else item
    assert sorted(item["required"]) == ["activeForm", "content", "status"]


async def test_the_cores_tasklist_gives_way_and_taskoutput_lists_background_tasks(tmp_path: Path) -> None:
    assert load(tmp_path).tools["TaskList"].plugin == "todos"
    without = Toolbox.load(cwd=tmp_path, plugins=[])
    assert without.tools["TaskList"].plugin == "core"
    session = load(tmp_path).session("default")
    listed = await session.call("TaskOutput", {})
    assert not listed.is_error and listed.text_content() == "No background tasks in this session."


def test_the_schemas_are_as_models_know_them(tmp_path: Path) -> None:
    tools = load(tmp_path).tools
    expected = {
        "TaskCreate": ({"subject", "description", "activeForm", "metadata"}, ["description", "subject"]),
        "TaskGet": ({"taskId"}, ["taskId"]),
        "TaskUpdate": ({"taskId", "subject", "description", "activeForm", "status", "addBlocks", "addBlockedBy",
                        "owner", "metadata"}, ["taskId"]),
        "TaskList": (set(), []),
    }
    for name, (params, required) in expected.items():
        schema = tools[name].schema
        assert set(schema.get("properties", {})) == params, name
        assert sorted(schema.get("required", [])) == required, name
        assert not tools[name].subagents

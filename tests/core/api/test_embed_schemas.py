"""Tool schemas as models know them (Claude Code's): which parameters are
required, and what a call that leaves one out gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard import Toolbox

pytestmark = pytest.mark.anyio


def _schemas(root: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    toolbox = Toolbox.load(cwd=root, plugins=["fs", "shell"])
    return {name: tool.schema for name, tool in toolbox.tools.items()}


def test_required_parameters_match_what_models_send(tmp_path: Path) -> None:
    schemas = _schemas(tmp_path)
    assert "new_source" in schemas["NotebookEdit"]["required"]
    assert set(schemas["TaskStop"]["properties"]) >= {"task_id", "shell_id"}
    assert not schemas["TaskStop"].get("required")
    assert set(schemas["Monitor"]["properties"]) >= {"command", "description"}
    assert not schemas["Monitor"].get("required")
    assert not schemas["ExitWorktree"].get("required")


async def test_calls_that_leave_them_out(tmp_path: Path) -> None:
    session = Toolbox.load(cwd=tmp_path, plugins=["fs", "shell"]).session("default")
    nothing = await session.call("TaskStop", {})
    assert nothing.is_error and "task_id" in nothing.text_content()
    older = await session.call("TaskStop", {"shell_id": "t9"})
    assert older.is_error and "t9" in older.text_content()  # read as the task id: no such task
    monitor = await session.call("Monitor", {"description": "ws feed"})
    assert monitor.is_error and "give command" in monitor.text_content()
    exit_ = await session.call("ExitWorktree", {})
    assert exit_.is_error and "not in a worktree" in exit_.text_content()  # validated: keep is the default

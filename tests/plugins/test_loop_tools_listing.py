"""Every loop tool (ask_user, plan_mode, todos, structured_output, findings,
and subtasks' SubagentHandback): `pegboard tools list` shows it with its
plugin and a description file, and `[plugins.<name>] enabled = false`
removes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, PegboardEnv

TOOLS = [
    ("ask_user", "AskUserQuestion"),
    ("plan_mode", "EnterPlanMode"),
    ("plan_mode", "ExitPlanMode"),
    ("todos", "TaskCreate"),
    ("todos", "TaskGet"),
    ("todos", "TaskUpdate"),
    ("todos", "TaskList"),
    ("structured_output", "StructuredOutput"),
    ("findings", "ReportFindings"),
    ("subtasks", "SubagentHandback"),
]
ROOT = Path(__file__).resolve().parents[2]


def rows(runner: CLIRunner) -> dict[str, dict[str, object]]:
    result = runner("tools", "list", "--json")
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.stdout)}


@pytest.mark.parametrize("plugin, tool", TOOLS, ids=[t for _, t in TOOLS])
def test_listed_with_its_plugin_and_gone_when_the_plugin_is_off(tmp_path: Path, pegboard_env: PegboardEnv,
                                                               plugin: str, tool: str) -> None:
    runner = CLIRunner(tmp_path, installed=[plugin])
    listed = rows(runner)
    assert listed[tool]["plugin"] == plugin and listed[tool]["enabled"] is True
    assert (ROOT / "plugins" / plugin / "descriptions" / f"{tool}.md").is_file()
    shown = runner("tools", "show", tool)
    assert shown.exit_code == 0 and len(shown.stdout) > 100, shown.output

    pegboard_env.user_config(f"[plugins.{plugin}]\nenabled = false\n")
    after = rows(runner).get(tool)
    if tool == "TaskList":  # the core's own, deprecated listing of background tasks is back
        assert after is not None and after["plugin"] == "core"
    else:
        assert after is None or after["enabled"] is False

"""`pegboard tools list` says what Bash may do in the listed mode (it is
offered at the read level, yet may delete files where the mode allows), from
the decisions the engine makes for the shell plugin's permission examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pegboard.plugins.shell._sandbox import backend_for
from pegboard.testing import CLIRunner, PegboardEnv

needs_bwrap = pytest.mark.skipif(backend_for("auto") != "bubblewrap",
                                 reason="the table below is bubblewrap's (the box that keeps protected paths)")


def bash_row(runner: CLIRunner, *args: str) -> dict[str, object]:
    listed = runner("tools", "list", "--json", *args)
    assert listed.exit_code == 0, listed.output
    [row] = [r for r in json.loads(listed.stdout) if r["name"] == "Bash"]
    return row


@needs_bwrap
def test_the_listing_shows_what_bash_may_do_per_mode(tmp_path: Path) -> None:
    runner = CLIRunner(tmp_path, installed=["shell"])
    assert list(bash_row(runner)["may"]) == ["default"]  # type: ignore[call-overload]  # the listed mode's
    assert list(bash_row(runner, "--mode", "read")["may"]) == ["read"]  # type: ignore[call-overload]
    shown = runner("tools", "show", "Bash", "--json")
    may = json.loads(shown.stdout)["may"]
    decided = {mode: [e["decision"] for e in rows] for mode, rows in may.items()}
    # read-only, file commands, other commands (docs/plugins/shell.md, "Bash in each mode")
    assert decided["default"] == ["allow", "ask", "ask"]
    assert decided["acceptEdits"] == ["allow", "allow", "allow"]
    assert decided["dontAsk"] == ["allow", "deny", "deny"]
    assert decided["read"] == ["allow", "deny", "allow"]
    assert "plan" not in decided  # Bash is not offered there
    text = runner("tools", "list").stdout
    assert "in default: read-only commands (ls): allow; file commands (mkdir new): ask; " \
           "other commands (rm -rf build): ask" in text
    assert "in acceptEdits: read-only commands (ls): allow; file commands (mkdir new): allow; " \
           "other commands (rm -rf build): allow" in runner("tools", "list", "--mode", "acceptEdits").stdout
    shown = runner("tools", "show", "Bash").stdout
    assert "  dontAsk: read-only commands (ls): allow; file commands (mkdir new): deny" in shown


@needs_bwrap
def test_rules_are_part_of_what_it_may_do(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    pegboard_env.user_config('[permissions]\nallow = ["Bash(rm:*)"]\n')
    may = bash_row(CLIRunner(tmp_path, installed=["shell"]))["may"]
    assert [e["decision"] for e in may["default"]] == ["allow", "ask", "allow"]  # type: ignore[index]

"""The command line's conventions: -h everywhere, help on a bare group with
exit 0, distinct exit codes for "no such tool" and a deny, JSON errors with
--json, completion of tool and plugin names, colour at a terminal only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from pegboard._cli.main import cli
from pegboard.testing import CLIRunner, PegboardEnv


def every_command(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += every_command(command, ctx, (*path, name))
        elif command is not None:
            found.append((*path, name))
    return found


@pytest.mark.slow
def test_dash_h_is_help_everywhere(tmp_path: Path) -> None:
    runner = CLIRunner(tmp_path, installed=None)
    with click.Context(cli, obj=None) as ctx:
        commands = every_command(cli, ctx)
    assert ("tools", "show") in commands and ("skills", "list") in commands  # a plugin's command too
    for path in commands:
        result = runner(*path, "-h")
        assert result.exit_code == 0, (path, result.output)
        assert result.stdout.startswith("Usage: "), path


@pytest.mark.parametrize("args", [(), ("tools",), ("permissions",), ("config",), ("plugins",)])
def test_a_bare_group_shows_its_help_and_exits_0(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, list(args), prog_name="pegboard")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: pegboard") and "Commands:" in result.stdout


def test_no_such_tool_and_deny_exit_differently(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    pegboard_env.user_config('[permissions]\ndeny = ["Read"]\n')
    runner = CLIRunner(tmp_path, installed=["fs"])
    denied = runner("permissions", "check", "Read", "--input", json.dumps({"file_path": str(tmp_path / "a")}))
    assert denied.exit_code == 1 and denied.stdout.startswith("deny:")
    unknown = runner("permissions", "check", "Reed")
    assert unknown.exit_code == 4 and unknown.stdout.startswith("deny: There is no tool called 'Reed'")
    assert runner("call", "Nope").exit_code == 4 and runner("tools", "show", "Nope").exit_code == 4
    assert "4 no such tool" in " ".join(runner("-h").stdout.split())
    assert "4 no tool has that name" in " ".join(runner("permissions", "check", "-h").stdout.split())


def test_json_errors_are_json(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    runner = CLIRunner(tmp_path, installed=["fs"])
    shown = runner("tools", "show", "Nope", "--json")
    assert shown.exit_code == 4
    assert json.loads(shown.stdout) == {"error": "no tool called 'Nope' (`pegboard tools list` shows them)",
                                        "exit_code": 4, "tool": "Nope", "did_you_mean": None}
    usage = runner("permissions", "check", "--json")
    assert usage.exit_code == 2 and json.loads(usage.stdout)["error"] == "give a TOOL or --batch FILE"
    pegboard_env.user_config("[permisions]\n")
    config = runner("tools", "list", "--json")
    error: dict[str, Any] = json.loads(config.stdout)
    assert config.exit_code == 2 and error["error"] == "configuration problems"
    assert error["problems"][0].endswith("[permisions]: unknown table; did you mean [permissions]?")


def complete(words: str) -> list[str]:
    result = CliRunner().invoke(cli, [], prog_name="pegboard", env={
        "_PEGBOARD_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)})
    return [line.split(",", 1)[1] for line in result.stdout.splitlines()]


def test_completion_of_tool_and_plugin_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert complete("pegboard tools show Rea") == ["Read"]
    assert complete("pegboard call Noteb") == ["NotebookEdit"]
    assert complete("pegboard permissions check Web") == ["WebFetch", "WebSearch"]
    assert complete("pegboard plugins check we") == ["web"]


@pytest.mark.slow
def test_colour_at_a_terminal_only_and_never_with_no_color(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    pegboard_env.user_config('[permissions]\ndeny = ["Read"]\n')
    args = ["--cwd", str(tmp_path), "permissions", "check", "Read", "--input", '{"file_path": "a"}']
    at_a_terminal = CliRunner().invoke(cli, args, color=True)
    assert at_a_terminal.stdout.startswith(click.style("deny", fg="red", bold=True) + ":")
    assert CliRunner().invoke(cli, args).stdout.startswith("deny:")  # not a terminal
    no_color = CliRunner(env={"NO_COLOR": "1"}).invoke(cli, args, color=True)
    assert no_color.stdout.startswith("deny:")
    doctor = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "doctor"], color=True)
    assert click.style("OK   ", fg="green", bold=False) in doctor.stdout

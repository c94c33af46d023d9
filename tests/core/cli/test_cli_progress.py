"""Progress at the terminal (``pegboard.cli.progress``): a spinner and a
line per step on a pty, nothing on a pipe unless asked, nothing outside the
``pegboard`` command, no colour with ``NO_COLOR``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _terminal import converse
from mcp_servers.helpers import KITCHEN_SINK

from pegboard._util import progress as _progress
from pegboard.cli import progress

PEGBOARD = Path(sys.executable).parent / "pegboard"
COLOUR = "\x1b[36m"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_spinner_shows_the_newest_text_the_seconds_and_the_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    screen = FakeTerminal()
    display = _progress._Display(screen, spin=True)
    first = _progress.Progress(display, "Starting MCP server a")
    display.active.append(first)
    first.started -= 3  # as if it had run for three seconds
    display.draw()
    assert screen.getvalue().endswith("Starting MCP server a \x1b[2m3 s\x1b[0m") and COLOUR in screen.getvalue()
    second = _progress.Progress(display, "Starting MCP server b")
    display.active.append(second)
    first.step("a: 12 tools")
    shown = screen.getvalue()
    assert "\r\x1b[2Ka: 12 tools\n" in shown and shown.endswith("Starting MCP server b (+1 more) \x1b[2m3 s\x1b[0m")
    display.finish(first)
    display.finish(second)
    assert screen.getvalue().endswith("\r\x1b[2K")  # the spinner's line is gone at the end

    monkeypatch.setenv("NO_COLOR", "1")
    plain = FakeTerminal()
    display = _progress._Display(plain, spin=True)
    display.active.append(first)
    display.draw()
    assert "\x1b[3" not in plain.getvalue() and "\x1b[2m" not in plain.getvalue()
    assert plain.getvalue().endswith("Starting MCP server a 3 s")


def test_a_question_pauses_the_spinner(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = FakeTerminal()
    display = _progress._Display(screen, spin=True)
    monkeypatch.setattr(_progress, "_display", display)
    shown = _progress.Progress(display, "Running agent")
    shown.started -= 1
    display.active.append(shown)
    display.draw()
    with _progress.paused():
        before = screen.getvalue()
        assert before.endswith("\r\x1b[2K")  # cleared for the question
        display.draw()
        assert screen.getvalue() == before  # nothing drawn over it
    assert "Running agent" in screen.getvalue()[len(before):]


def test_nothing_is_shown_outside_the_pegboard_command(capfd: pytest.CaptureFixture[str]) -> None:
    assert not _progress._enabled  # only the console script turns it on
    with progress("Indexing") as shown:
        shown.step("indexed a")
        shown.update("Indexing more")
    assert capfd.readouterr() == ("", "")


def _plugins_new(tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PEGBOARD), "plugins", "new", "demo", "--dir", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_plugins_new_says_each_file_at_a_terminal_and_nothing_more_on_a_pipe(tmp_path: Path) -> None:
    code, screen = converse(["plugins", "new", "demo", "--dir", str(tmp_path / "tty")], {})
    assert code == 0, screen
    folder = tmp_path / "tty" / "pegboard-demo"
    assert f"wrote {folder / 'pyproject.toml'}" in screen and f"wrote {folder / 'tests' / 'test_plugin.py'}" in screen
    piped = _plugins_new(tmp_path)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    assert piped.stdout.startswith(f"made {tmp_path / 'pegboard-demo'}\n") and "wrote" not in piped.stdout
    asked = _plugins_new(tmp_path / "asked", {"PEGBOARD_PROGRESS": "1"})
    assert "Making pegboard-demo\n" in asked.stderr and "wrote " in asked.stderr


def _slow_server(tmp_path: Path) -> Path:
    """A config with one MCP server that takes a second to start."""
    config = tmp_path / "extra.toml"
    start = f"sleep 1.5; exec {sys.executable} {KITCHEN_SINK}"
    config.write_text(f'[plugins.mcp.servers.slow]\ncommand = "bash"\nargs = ["-c", {json.dumps(start)}]\n')
    return config


@pytest.mark.slow
def test_mcp_refresh_spins_at_a_terminal_without_colour_under_no_color(tmp_path: Path) -> None:
    config = _slow_server(tmp_path)
    args = ["--cwd", str(tmp_path), "--config", str(config), "mcp", "refresh"]
    code, screen = converse(args, {}, env={"NO_COLOR": ""})
    assert code == 0 and "slow: 12 tools" in screen, screen
    assert "Starting MCP server slow" in screen and "\r\x1b[2K" in screen and COLOUR in screen
    code, plain = converse(args, {}, env={"NO_COLOR": "1"})
    assert code == 0 and "Starting MCP server slow" in plain and "\x1b[3" not in plain and "\x1b[2m" not in plain
    piped = subprocess.run([str(PEGBOARD), *args], capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert piped.returncode == 0 and piped.stdout == "slow: 12 tools\n"
    assert "Starting" not in piped.stderr and "Listing" not in piped.stderr and "\r" not in piped.stderr
    asked = subprocess.run([str(PEGBOARD), *args], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PEGBOARD_PROGRESS": "1"})
    assert "Listing the tools of 1 MCP server\n" in asked.stderr and "Starting MCP server slow\n" in asked.stderr
    assert "\r" not in asked.stderr


@pytest.mark.slow
def test_agent_run_spins_while_the_agent_works_and_not_on_a_pipe(tmp_path: Path) -> None:
    from _model_servers import ModelServer, model_server, say

    from pegboard.paths import config_dir

    def slow_reply(server: ModelServer, request: dict[str, object]) -> tuple[int, dict[str, str], bytes]:
        time.sleep(1.0)  # a model that thinks: long enough for the spinner to turn
        return say("All done.")(server, request)

    with model_server("anthropic", [slow_reply, slow_reply]) as server:
        path = config_dir() / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'[plugins.subtasks]\nrunner = "anthropic"\nmodel = "test-model"\nbase_url = "{server.url}"\n')
        env = {"PEGBOARD_PLUGINS": "fs,subtasks", "ANTHROPIC_API_KEY": "test-key"}
        args = ["--cwd", str(tmp_path), "agent", "run", "Say you are done"]
        code, screen = converse(args, {}, env=env)
        assert code == 0 and "All done." in screen, screen
        assert "Running agent general-purpose: Say you are done" in screen and "\r\x1b[2K" in screen
        piped = subprocess.run([str(PEGBOARD), *args], capture_output=True, text=True, timeout=120,
                               env={**os.environ, **env})
    assert piped.returncode == 0 and "All done." in piped.stdout, piped.stderr
    assert "Running agent" not in piped.stderr and "\r" not in piped.stderr

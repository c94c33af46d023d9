"""Bash in default mode (issue 29): a command the classifier does not call
read-only asks, sandbox or not; the box runs such commands unasked only where
edits run unasked already (acceptEdits, the workspace level), or where it
writes nothing (the read level), or where the person opted in with
``auto_allow_if_sandboxed = true``. An approved command still runs in the box."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox, hookimpl
from pegboard._api.decisions import Answer
from pegboard.plugins.shell._sandbox import backend_for

needs_bwrap = pytest.mark.skipif(backend_for("auto") != "bubblewrap",
                                 reason="needs bubblewrap (the box that keeps .git read-only in the workspace)")

PEGBOARD = shutil.which("pegboard", path=os.path.dirname(sys.executable)) or str(Path(sys.executable).parent / "pegboard")
WRITERS = ["rm -rf .", "git commit -m x", "sed -i s/a/b/ f", "echo x > file"]
READERS = ["ls", "cat f"]


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    (root / ".git").mkdir(parents=True)
    (root / "f").write_text("a\n")
    return root


def _config(tmp_path: Path, body: str = "") -> Path:
    cfg = tmp_path / "shell.toml"
    cfg.write_text(f'[plugins.shell]\nsandbox = "auto"\n{body}\n')
    return cfg


def check(proj: Path, cfg: Path, command: str, mode: str) -> dict[str, Any]:
    """``pegboard permissions check Bash`` as a person runs it."""
    r = subprocess.run([PEGBOARD, "--cwd", str(proj), "--config", str(cfg),
                        "permissions", "check", "Bash", "--mode", mode, "--json",
                        "--input", json.dumps({"command": command})],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert r.returncode in (0, 1, 3), (r.returncode, r.stdout, r.stderr)
    out: dict[str, Any] = json.loads(r.stdout)
    return out


async def decide(tb: Toolbox, command: str, mode: str) -> Any:
    session = tb.session(mode=mode)
    try:
        return await session.decide("Bash", {"command": command})
    finally:
        await session.aclose()


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("command", WRITERS)
def test_a_command_that_may_write_asks_in_default_and_runs_in_accept_edits(
        proj: Path, tmp_path: Path, command: str) -> None:
    cfg = _config(tmp_path)
    d = check(proj, cfg, command, "default")
    assert d["decision"] == "ask", d
    assert "sandboxed or not" in d["reason"], d
    assert check(proj, cfg, command, "acceptEdits")["decision"] == "allow"


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("command", READERS)
def test_read_only_commands_still_run_in_default(proj: Path, tmp_path: Path, command: str) -> None:
    assert check(proj, _config(tmp_path), command, "default")["decision"] == "allow"


@needs_bwrap
@pytest.mark.slow
def test_the_opt_in_brings_the_box_auto_allow_back_to_default(proj: Path, tmp_path: Path) -> None:
    cfg = _config(tmp_path, "auto_allow_if_sandboxed = true")
    for command in WRITERS:
        d = check(proj, cfg, command, "default")
        assert d["decision"] == "allow" and "sandbox" in d["reason"], (command, d)


@needs_bwrap
@pytest.mark.anyio
async def test_each_policy_in_process(proj: Path, tmp_path: Path) -> None:
    unset = Toolbox.load(cwd=proj, plugins=["shell"], config=_config(tmp_path))
    for command in WRITERS:
        assert (await decide(unset, command, "default")).decision == "ask", command
        # auto is default plus a classifier: the ask goes to it (without one, to the person)
        assert (await decide(unset, command, "auto")).decision == "ask", command
        # dontAsk denies what would ask
        assert (await decide(unset, command, "dontAsk")).decision == "deny", command
        assert (await decide(unset, command, "acceptEdits")).decision == "allow", command
        assert (await decide(unset, command, "workspace")).decision == "allow", command
        # the read level's box writes nothing: the command cannot change the workspace
        assert (await decide(unset, command, "read")).decision == "allow", command
    for command in READERS:
        assert (await decide(unset, command, "default")).decision == "allow", command
    never = Toolbox.load(cwd=proj, plugins=["shell"], config=_config(tmp_path, "auto_allow_if_sandboxed = false"))
    assert (await decide(never, "rm -rf .", "acceptEdits")).decision == "ask"
    assert (await decide(never, "ls", "default")).decision == "allow"


@needs_bwrap
@pytest.mark.anyio
async def test_deny_rules_win_everywhere(proj: Path, tmp_path: Path) -> None:
    cfg = _config(tmp_path, 'auto_allow_if_sandboxed = true\n\n[permissions]\ndeny = ["Bash(rm:*)"]')
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)
    for mode in ("default", "acceptEdits", "workspace", "read", "bypassPermissions"):
        assert (await decide(tb, "rm -rf .", mode)).decision == "deny", mode
    assert (await decide(tb, "git commit -m x", "default")).decision == "allow"


@needs_bwrap
@pytest.mark.anyio
async def test_a_project_config_cannot_opt_itself_in(proj: Path, tmp_path: Path, trust_project: Any) -> None:
    """The opt-in is the person's: even a trusted checkout's own config does not set it."""
    (proj / ".pegboard").mkdir()
    (proj / ".pegboard" / "config.toml").write_text("[plugins.shell]\nauto_allow_if_sandboxed = true\n")
    trust_project(proj)
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=_config(tmp_path))
    assert (await decide(tb, "rm -rf .", "default")).decision == "ask"


class _Approver:
    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asked.append(str(request.input.get("command")))
        return Answer(allow=True)


@needs_bwrap
@pytest.mark.anyio
async def test_an_approved_command_still_runs_in_the_box(proj: Path, tmp_path: Path) -> None:
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    host = _Approver()
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=host, config=_config(tmp_path))
    s = tb.session(mode="default")
    try:
        command = f"echo made > new; touch .git/planted; touch {outside}/escaped; echo done"
        r = await s.call("Bash", {"command": command})
        assert host.asked == [command]
        assert "done" in r.text_content()
        assert (proj / "new").read_text() == "made\n"  # the working directory is writable...
        assert not (proj / ".git" / "planted").exists()  # ...but .git is kept read-only
        assert not (outside / "escaped").exists()  # and nothing outside is writable
    finally:
        await s.aclose()

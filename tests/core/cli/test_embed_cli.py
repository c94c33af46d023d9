"""The command line as people expect it: --input -, --json on doctor, config
path and checkpoints list, shell completion, and --cwd/--config after any
subcommand, plugin commands included (real processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PEGBOARD = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")


def run(*args: str, input: str | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, *args], input=input, capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**os.environ, **(env or {})})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text("one\ntwo\n")
    return root


@pytest.mark.slow
def test_input_dash_reads_the_arguments_from_stdin(project: Path) -> None:
    args = json.dumps({"file_path": str(project / "notes.md")})
    called = run("call", "Read", "--input", "-", "--cwd", str(project), input=args)
    assert called.returncode == 0 and "two" in called.stdout, called.stderr
    checked = run("permissions", "check", "Read", "--input", "-", "--json", "--cwd", str(project), input=args)
    assert checked.returncode == 0 and json.loads(checked.stdout)["decision"] == "allow"
    broken = run("call", "Read", "--input", "-", "--cwd", str(project), input="{nope")
    assert broken.returncode == 2 and "--input is not valid JSON" in broken.stderr


@pytest.mark.slow
def test_permissions_check_exit_status_is_the_decision(project: Path) -> None:
    write = json.dumps({"file_path": str(project / "x.txt"), "content": "x"})
    assert run("permissions", "check", "Write", "--input", write, "--cwd", str(project)).returncode == 3  # ask
    assert run("permissions", "check", "Write", "--input", write, "--mode", "plan",
               "--cwd", str(project)).returncode == 1  # deny
    assert run("permissions", "check", "Write", "--input", write, "--mode", "acceptEdits",
               "--cwd", str(project)).returncode == 0  # allow
    assert run("permissions", "check", "Write", "--mode", "nonsense", "--cwd", str(project)).returncode == 2


@pytest.mark.slow
def test_doctor_and_config_path_speak_json(project: Path) -> None:
    doctor = run("doctor", "--json", "--cwd", str(project))
    data = json.loads(doctor.stdout)
    assert doctor.returncode == (0 if data["ok"] else 1)
    assert {"status", "name", "detail"} <= set(data["checks"][0])
    assert any(c["name"] == "plugin fs" for c in data["checks"])
    paths = json.loads(run("config", "path", "--json", "--cwd", str(project)).stdout)
    layers = {f["layer"]: f for f in paths["files"]}
    assert layers["project"]["path"] == str(project.resolve() / ".pegboard" / "config.toml")
    assert layers["project"]["exists"] is False and paths["trusted"] is False


@pytest.mark.slow
def test_checkpoints_list_json_and_global_options_after_a_plugin_command(project: Path) -> None:
    target = project / "new.md"
    wrote = run("call", "Write", "--mode", "acceptEdits", "--cwd", str(project),
                "--input", json.dumps({"file_path": str(target), "content": "three\n"}))
    assert wrote.returncode == 0 and target.read_text() == "three\n", wrote.stdout + wrote.stderr
    listed = run("checkpoints", "list", "--json", "--cwd", str(project))
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [(c["path"], c["tool"], c["existed"]) for c in data["checkpoints"]] == [(str(target), "Write", False)]
    # A plugin command takes --cwd after its name, and honours it.
    skill = project / ".pegboard" / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: A demo skill.\n---\nDo the demo.\n")
    assert run("trust", str(project)).returncode == 0
    skills = run("skills", "list", "--json", "--cwd", str(project))
    assert skills.returncode == 0, skills.stderr
    assert "demo" in skills.stdout
    elsewhere = run("skills", "list", "--json", "--cwd", str(project.parent))
    assert elsewhere.returncode == 0 and "demo" not in elsewhere.stdout


@pytest.mark.slow
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    script = run("completion", shell)
    assert script.returncode == 0 and "_PEGBOARD_COMPLETE" in script.stdout


@pytest.mark.slow
def test_completion_completes_commands() -> None:
    done = run(env={"_PEGBOARD_COMPLETE": "bash_complete", "COMP_WORDS": "pegboard too", "COMP_CWORD": "1"})
    assert "tools" in done.stdout
    plugin = run(env={"_PEGBOARD_COMPLETE": "bash_complete", "COMP_WORDS": "pegboard check", "COMP_CWORD": "1"})
    assert "checkpoints" in plugin.stdout  # a plugin's command too

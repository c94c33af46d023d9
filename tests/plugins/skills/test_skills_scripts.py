"""run_skill_script with real scripts and real subprocesses."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, PermissionRequest, Session, Toolbox, ToolResult, hookimpl
from pegboard._loading.config import config_dir
from pegboard.plugins.skills._scripts import SHELL_METACHARACTERS, check_args


class Host:
    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    @hookimpl
    def pegboard_ask(self, request: PermissionRequest, decision: Any) -> Answer:
        self.asked.append(dict(request.input))
        return Answer(allow=True)


def skill_dir(name: str = "tools") -> Path:
    folder = config_dir() / "skills" / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Script tools\n---\nUse the scripts.\n",
                                     encoding="utf-8")
    return folder


def script(folder: Path, relpath: str, text: str, executable: bool = False) -> Path:
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def start(tmp_path: Path, options: str = "scripts = true", skill: str | None = "tools",
          host: Host | None = None) -> Session:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    cfg = tmp_path / "extra.toml"
    cfg.write_text(f"[plugins.skills]\n{options}\n", encoding="utf-8")
    session = Toolbox.load(cwd=root, config=cfg, plugins=["skills"], host=host or Host()).session()
    if skill is not None:
        result = run(session, "Skill", {"skill": skill})
        assert not result.is_error, result.text_content()
    return session


def run(session: Session, tool: str, args: dict[str, Any]) -> ToolResult:
    return asyncio.run(session.call(tool, args))


def test_switched_off_by_default(tmp_path: Path) -> None:
    skill_dir()
    session = start(tmp_path, options="")
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/x.py"})
    assert result.is_error and "run_skill_script" in result.text_content()


def test_shebang_is_honoured_without_exec_bit_and_asks(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/who.sh", "#!/bin/sh\necho \"shell says $1\"\npwd\n")
    host = Host()
    session = start(tmp_path, host=host)
    result = run(session, "run_skill_script",
                 {"skill": "tools", "relpath": "scripts/who.sh", "args": ["two words"]})
    assert not result.is_error, result.text_content()
    text = result.text_content()
    assert "exited with code 0" in text and "shell says two words" in text
    assert str(tmp_path / "project") in text  # runs in the project root
    assert host.asked == [{"skill": "tools", "relpath": "scripts/who.sh", "args": ["two words"]}]


def test_env_shebang_with_argument(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/env.py", "#!/usr/bin/env python3\nimport os, sys\n"
                                     "print(os.environ['PEGBOARD_SKILL_DIR'], sys.argv[1:])\n")
    result = run(start(tmp_path), "run_skill_script",
                 {"skill": "tools", "relpath": "scripts/env.py", "args": ["a", "b c"]})
    assert f"{folder} ['a', 'b c']" in result.text_content()


def test_interpreter_chosen_by_extension(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/plain.py", "import sys\nprint('python', sys.argv[1])\n")
    script(folder, "scripts/plain.sh", "echo sh \"$1\"\n")
    session = start(tmp_path)
    assert "python 1" in run(session, "run_skill_script",
                             {"skill": "tools", "relpath": "scripts/plain.py", "args": ["1"]}).text_content()
    assert "sh 2" in run(session, "run_skill_script",
                         {"skill": "tools", "relpath": "scripts/plain.sh", "args": ["2"]}).text_content()


def test_executable_without_shebang_or_extension_runs_directly_else_refused(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/mystery", "echo hi\n")
    binary = folder / "scripts" / "echo-bin"
    shutil.copy2("/bin/echo", binary)
    session = start(tmp_path)
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/mystery"})
    assert result.is_error and "cannot tell how to run it" in result.text_content()
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/echo-bin", "args": ["direct"]})
    assert not result.is_error and "stdout:\ndirect" in result.text_content()


def test_nonzero_exit_is_an_error_with_output(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/fail.py", "import sys\nprint('out')\nprint('bad', file=sys.stderr)\nsys.exit(3)\n")
    result = run(start(tmp_path), "run_skill_script", {"skill": "tools", "relpath": "scripts/fail.py"})
    text = result.text_content()
    assert result.is_error and "exited with code 3" in text and "stdout:\nout" in text and "stderr:\nbad" in text


def test_only_the_active_skill_runs_scripts(tmp_path: Path) -> None:
    folder = skill_dir("tools")
    script(folder, "scripts/ok.py", "print('ran')\n")
    skill_dir("other")
    session = start(tmp_path, skill=None)
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/ok.py"})
    assert result.is_error and "No skill is active" in result.text_content()
    run(session, "Skill", {"skill": "other"})
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/ok.py"})
    assert result.is_error and "is not the active skill" in result.text_content()
    run(session, "Skill", {"skill": "tools"})
    assert "ran" in run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/ok.py"}).text_content()


@pytest.mark.slow
@pytest.mark.parametrize("relpath", ["../other/scripts/x.py", "/etc/hostname", "scripts/../../other/scripts/x.py",
                                     "scripts/link.py", "scripts/dirlink/x.py", "", "scripts", "."])
def test_relpath_must_stay_inside_the_skill(tmp_path: Path, relpath: str) -> None:
    folder = skill_dir()
    other = skill_dir("other")
    marker = tmp_path / "escaped"
    script(other, "scripts/x.py", f"open({str(marker)!r}, 'w').write('x')\n")
    os.symlink(other / "scripts" / "x.py", folder / "scripts" / "link.py")
    os.symlink(other / "scripts", folder / "scripts" / "dirlink")
    result = run(start(tmp_path), "run_skill_script", {"skill": "tools", "relpath": relpath})
    assert result.is_error
    assert not marker.exists()


def test_symlink_within_the_skill_is_fine(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "lib/real.py", "print('real')\n")
    os.symlink(folder / "lib" / "real.py", folder / "scripts" / "alias.py")
    result = run(start(tmp_path), "run_skill_script", {"skill": "tools", "relpath": "scripts/alias.py"})
    assert not result.is_error and "real" in result.text_content()


@pytest.mark.slow
@pytest.mark.parametrize("arg", ["; touch pwned", "$(touch pwned)", "`touch pwned`", "a|b", "a && b", "x > y",
                                 "line\nbreak", "*.py", "~root", "it's", 'say "hi"', "back\\slash", "{a,b}"])
def test_shell_metacharacters_are_refused(tmp_path: Path, arg: str) -> None:
    folder = skill_dir()
    marker = tmp_path / "ran"
    script(folder, "scripts/mark.py", f"open({str(marker)!r}, 'w').write('x')\n")
    result = run(start(tmp_path), "run_skill_script",
                 {"skill": "tools", "relpath": "scripts/mark.py", "args": ["fine", arg]})
    assert result.is_error and "shell metacharacters" in result.text_content()
    assert not marker.exists()


def test_plain_arguments_pass() -> None:
    assert check_args(["--flag=value", "two words", "path/to/file.txt", "a-b_c.d", "100%", "x,y", "@me", "+1"]) is None
    assert {";", "|", "&", "$", "`", "\n"} <= SHELL_METACHARACTERS


@pytest.mark.slow
def test_timeout_stops_the_script_and_its_children(tmp_path: Path) -> None:
    folder = skill_dir()
    pidfile = tmp_path / "child.pid"
    script(folder, "scripts/slow.sh", f"#!/bin/sh\nsleep 60 &\necho $! > {pidfile}\nwait\n")
    session = start(tmp_path, options="scripts = true\nscript_timeout_s = 1")
    result = run(session, "run_skill_script", {"skill": "tools", "relpath": "scripts/slow.sh"})
    assert result.is_error and "did not finish within 1s" in result.text_content()
    child = int(pidfile.read_text().strip())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the script's child process survived the timeout")


def test_missing_interpreter_is_reported(tmp_path: Path) -> None:
    folder = skill_dir()
    script(folder, "scripts/odd.sh", "#!/no/such/interpreter\necho\n")
    result = run(start(tmp_path), "run_skill_script", {"skill": "tools", "relpath": "scripts/odd.sh"})
    assert result.is_error and "Could not start '/no/such/interpreter'" in result.text_content()

"""The wheel carries every description file, and a third-party plugin
installed as a distribution shows up, can be disabled, and loads its text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
UV = shutil.which("uv")

pytestmark = pytest.mark.skipif(UV is None, reason="uv builds and installs the wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([UV, "build", "--wheel", "--out-dir", str(out), str(ROOT)], check=True,
                   capture_output=True)
    return next(out.glob("pegboard-*.whl"))


@pytest.mark.slow
def test_wheel_contains_every_description(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"pegboard/descriptions/{p.name}" for p in (ROOT / "core" / "descriptions").glob("*.md")}
    for plugin in (ROOT / "plugins").iterdir():
        for folder in ("descriptions", "agents"):
            for md in (plugin / folder).glob("*.md"):
                expected.add(f"pegboard/plugins/{plugin.name}/{folder}/{md.name}")
    assert expected and expected <= names, expected - names


@pytest.mark.slow
def test_wheel_installs_and_lists_tools_and_third_party_plugin(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    subprocess.run([UV, "pip", "install", "--python", str(python), str(wheel),
                    str(ROOT / "examples" / "pegboard-hello")], check=True, capture_output=True)
    env = {**os.environ, "PEGBOARD_PLUGINS": ""}
    env.pop("PEGBOARD_PLUGINS")
    project = tmp_path / "project"
    project.mkdir()
    pegboard = str(venv / "bin" / "pegboard")

    def tools() -> dict[str, dict[str, object]]:
        out = subprocess.run([pegboard, "--cwd", str(project), "tools", "list", "--json"], check=True,
                             capture_output=True, text=True, env=env)
        return {r["name"]: r for r in json.loads(out.stdout)}

    listed = tools()
    assert listed["Hello"]["plugin"] == "hello" and listed["Hello"]["enabled"] is True
    shown = subprocess.run([pegboard, "--cwd", str(project), "tools", "show", "Hello", "--json"], check=True,
                           capture_output=True, text=True, env=env)
    assert json.loads(shown.stdout)["description"].startswith("Greets someone by name.")
    called = subprocess.run([pegboard, "--cwd", str(project), "call", "Hello", "--input", '{"name": "Ada"}'],
                            capture_output=True, text=True, env=env)
    assert called.returncode == 0 and called.stdout.strip() == "Hello, Ada!"

    (project / ".pegboard").mkdir()
    (project / ".pegboard" / "config.toml").write_text("[plugins.hello]\nenabled = false\n")
    listed = tools()
    assert listed["Hello"]["enabled"] is False
    assert str(listed["Hello"]["status"]).startswith("disabled by [plugins.hello]")


STRICT_PLUGIN = '''\
"""A plugin written against pegboard's public names only, as a third party writes one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

import pegboard.cli
from pegboard import PermissionRequest, PluginContext, PluginSession, Tool, ToolContext, ToolResult, Vote, hookimpl
from pegboard.paths import atomic_write, is_within


class NoteInput(BaseModel):
    text: str


async def note(args: NoteInput, ctx: ToolContext) -> ToolResult:
    target = ctx.root / "notes.txt"
    if not is_within(target, ctx.root):
        return ToolResult.error("outside the project")
    atomic_write(target, args.text.encode())
    running = [task.id for task in ctx.session.tasks.list() if task.status == "running"]
    return ToolResult.text(f"noted in {Path(target).name} ({len(running)} tasks running)")


def offered(session: PluginSession) -> bool:
    return session.mode != "plan" and session.inside_working_dirs(str(session.root))


@hookimpl
def pegboard_session_closed(session: PluginSession, context: PluginContext) -> None:
    session.plugin_state(context.name).clear()


def vote(request: PermissionRequest, context: PluginContext) -> Vote | None:
    return Vote.ask(f"{request.tool.name} writes into {context.name}'s notes")


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    register(Tool(name="Note", handler=note, input_model=NoteInput, vote=vote, offered_when=offered))


MODE: object = pegboard.cli.MODE
'''


@pytest.mark.slow
def test_a_plugin_on_the_public_api_passes_mypy_strict_against_the_installed_wheel(wheel: Path,
                                                                                  tmp_path: Path) -> None:
    """A plugin author's ``mypy --strict`` sees every public name as exported (a literal ``__all__``)
    and typed (``py.typed`` in the wheel), in a project where pegboard is installed, not edited."""
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    subprocess.run([UV, "pip", "install", "--python", str(python), str(wheel), "mypy"], check=True,
                   capture_output=True)
    (tmp_path / "strict_plugin.py").write_text(STRICT_PLUGIN, encoding="utf-8")
    checked = subprocess.run([str(python), "-m", "mypy", "--strict", "--no-incremental", "strict_plugin.py"],
                             cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 1 source file" in checked.stdout

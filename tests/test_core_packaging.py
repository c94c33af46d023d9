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

ROOT = Path(__file__).parent.parent
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

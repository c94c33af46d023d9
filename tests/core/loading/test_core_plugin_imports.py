"""A plugin's import is watched (issue 30 item 5): ``sys.exit`` at import is
that plugin's failure like any exception, and an import that takes long is
named on stderr, so no command exits silently or hangs without a word."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)
from pegboard import Toolbox
from pegboard.testing import PegboardEnv

EXITS = "import sys\nsys.exit(4)\n"
PEGBOARD = str(Path(sys.executable).parent / "pegboard")
LOOPS = "import time\nfor _ in range(3000):\n    time.sleep(0.1)\n"


def test_an_entry_point_plugin_calling_sys_exit_at_import_fails_alone(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(EXITS, name="quitter")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["quitter", "fs"])
    error = toolbox.records["quitter"].error or ""
    assert "it called sys.exit(4) while being imported" in error
    assert "Read" in toolbox.tools


def test_a_local_plugin_calling_sys_exit_at_import_fails_alone(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("quitter", EXITS)
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["quitter", "fs"])
    assert f"failed to import {path}: it called sys.exit(4) while being imported" in \
        (toolbox.records["quitter"].error or "")
    assert "Read" in toolbox.tools


def pegboard(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, "--cwd", str(cwd), *args], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.slow
def test_commands_still_work_beside_a_plugin_that_exits(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("quitter", EXITS)
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    env = dict(os.environ)
    listed = pegboard("plugins", "list", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["name"] == "quitter")
    assert "it called sys.exit(4) while being imported" in row["error"]
    doctor = pegboard("doctor", cwd=tmp_path, env=env)
    assert str(path) in doctor.stdout and "sys.exit(4)" in doctor.stdout
    called = pegboard("call", "Read", "--input", json.dumps({"file_path": str(tmp_path / "a.txt")}),
                      cwd=tmp_path, env=env)
    assert called.returncode == 0, called.stderr
    assert "hello" in called.stdout


@pytest.mark.slow
def test_a_plugin_that_loops_at_import_is_named_on_stderr(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("sleepy", LOOPS)
    env = {**os.environ, "PEGBOARD_PLUGIN_IMPORT_WARN_S": "0.5"}
    proc = subprocess.Popen([PEGBOARD, "--cwd", str(tmp_path), "tools", "list"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30  # a bound on the test, not a timing assertion
        line = ""
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([proc.stderr], [], [], left)[0]:
                break
            line = proc.stderr.readline()
            if "still importing" in line or not line:
                break
        assert "pegboard: still importing plugin 'sleepy'" in line and "sleepy.py" in line
    finally:
        proc.kill()
        proc.wait()

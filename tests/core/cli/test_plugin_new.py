"""``pegboard plugins new NAME`` makes a distribution that passes its own
tests and ``pegboard plugins check NAME`` as made, installed in a fresh venv
beside pegboard from this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, PegboardEnv, Project

ROOT = Path(__file__).parents[3]
UV = shutil.which("uv")


def test_the_distribution_has_what_an_author_starts_from(pegboard_cli: CLIRunner, tmp_path: Path) -> None:
    result = pegboard_cli("plugins", "new", "my-notes", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    folder = tmp_path / "pegboard-my-notes"
    assert result.stdout.startswith(f"made {folder}\n")
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pegboard"] == {"my-notes": "pegboard_my_notes"}
    assert (folder / "pegboard_my_notes" / "descriptions" / "MyNotes.md").read_text().strip()
    init = (folder / "pegboard_my_notes" / "__init__.py").read_text()
    assert "class MyNotesConfig(BaseModel)" in init and "pegboard._" not in init
    assert "pegboard_env" in (folder / "tests" / "test_plugin.py").read_text()
    again = pegboard_cli("plugins", "new", "my-notes", "--dir", str(tmp_path))
    assert again.exit_code == 2 and "already exists" in again.stderr
    bad = pegboard_cli("plugins", "new", "My Notes", "--dir", str(tmp_path))
    assert bad.exit_code == 2 and "a plugin name is lower-case letters" in bad.stderr


@pytest.mark.slow
@pytest.mark.skipif(UV is None, reason="uv makes the venv")
def test_a_new_plugin_passes_its_tests_and_the_check_in_a_fresh_venv(pegboard_cli: CLIRunner, tmp_path: Path,
                                                                    pegboard_env: PegboardEnv,
                                                                    pegboard_project: Project) -> None:
    assert UV is not None
    assert pegboard_cli("plugins", "new", "my-notes", "--dir", str(tmp_path)).exit_code == 0
    folder = tmp_path / "pegboard-my-notes"
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", "--python", sys.executable, str(venv)], check=True, capture_output=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run([UV, "pip", "install", "-q", "--python", python, str(ROOT),
                                "-e", f"{folder}[test]"], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    # the isolated environment of this test (XDG_*, PEGBOARD_POLICY) is inherited
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "VIRTUAL_ENV"))}
    tests = subprocess.run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"], cwd=folder,
                           capture_output=True, text=True, env=env, timeout=240)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "6 passed" in tests.stdout
    check = subprocess.run([str(venv / "bin" / "pegboard"), "--cwd", str(pegboard_project.root), "plugins",
                            "check", "my-notes"], capture_output=True, text=True, env=env, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.strip() == "my-notes: ok (1 tool; 3 sample rules on 3 sample calls)"
    # and the check does fail there when the plugin is broken
    init = folder / "pegboard_my_notes" / "__init__.py"
    init.write_text(init.read_text().replace('"pegboard_my_notes._tool:run"', '"pegboard_my_notes._tool:rnu"'))
    broken = subprocess.run([str(venv / "bin" / "pegboard"), "--cwd", str(pegboard_project.root), "plugins",
                             "check", "my-notes"], capture_output=True, text=True, env=env, timeout=120)
    assert broken.returncode == 1
    assert broken.stdout.startswith("my-notes: tool MyNotes: handler 'pegboard_my_notes._tool:rnu' does not "
                                    "resolve"), broken.stdout

"""docs/tutorial.md builds a real plugin: this test does what the page says
(``plugins new``, then every file the page gives, whole), runs the plugin's
own tests as the reader would, and ``plugins check`` on it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, Project

TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorial.md"


def files() -> dict[str, str]:
    """Every code block with a ``title="path"``: the file at that path."""
    text = TUTORIAL.read_text(encoding="utf-8")
    return {path: body for path, body in
            re.findall(r'^```\w+ title="([^"]+)"\n(.*?)^```$', text, flags=re.M | re.S)}


def test_the_page_gives_every_file_of_the_plugin() -> None:
    assert sorted(files()) == ["pegboard_wordcount/__init__.py", "pegboard_wordcount/_store.py",
                               "pegboard_wordcount/_tool.py", "pegboard_wordcount/descriptions/WordCount.md",
                               "tests/test_plugin.py"]
    assert "pegboard plugins new wordcount --tool WordCount\n" in TUTORIAL.read_text()


@pytest.mark.slow
def test_the_tutorial_plugin_passes_its_tests_and_the_check(tmp_path: Path, pegboard_project: Project,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    made = CLIRunner(pegboard_project.root)("plugins", "new", "wordcount", "--tool", "WordCount",
                                            "--dir", str(tmp_path))
    assert made.exit_code == 0, made.output
    folder = tmp_path / "pegboard-wordcount"
    for relative, text in files().items():
        (folder / relative).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=folder,
                           capture_output=True, text=True, env=env, timeout=240)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "8 passed" in tests.stdout  # the store upgrade's among them (docs/tutorial.md, section 5)
    monkeypatch.syspath_prepend(str(folder))
    try:
        checked = CLIRunner(pegboard_project.root, {"wordcount": "pegboard_wordcount"})("plugins", "check",
                                                                                         "wordcount")
    finally:
        for name in [m for m in sys.modules if m.startswith("pegboard_wordcount")]:
            del sys.modules[name]
    assert (checked.exit_code, checked.stdout) == (0, "wordcount: ok (1 tool; 3 sample rules on 3 sample calls)\n")

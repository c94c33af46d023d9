"""The README's main job installs pegboard and the mcp extra only; the test,
adapter, lint and docs tools are default groups that `uv run pytest` brings in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT_ONLY = ("pytest", "mypy", "mkdocs", "import-linter", "hypothesis", "claude-agent-sdk", "openai-agents",
                    "pydantic-ai-slim", "langchain-core", "anthropic", "openai", "build")


def test_the_groups_and_the_readme_agree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    groups = pyproject["dependency-groups"]
    assert groups["mcp"] == ["pegboard[mcp]"]
    assert sorted(pyproject["tool"]["uv"]["default-groups"]) == ["dev", "mcp"]
    assert {g["include-group"] for g in groups["dev"]} == {"test", "adapters", "lint", "docs"}
    runtime = [*pyproject["project"]["dependencies"], *pyproject["project"]["optional-dependencies"]["mcp"]]
    names = {re.split(r"[\[<>=~ ]", spec, maxsplit=1)[0] for spec in runtime}
    assert names.isdisjoint(DEVELOPMENT_ONLY)
    readme = (ROOT / "README.md").read_text()
    assert "uv run --no-dev pegboard tools list" in readme and "uv run pytest " in readme


@pytest.mark.slow
def test_the_main_job_resolves_without_the_development_tools() -> None:
    uv = shutil.which("uv")
    if uv is None or not (ROOT / "uv.lock").is_file():
        pytest.skip("needs uv and the lock file `uv run` makes")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    main = subprocess.run([uv, "export", "--no-dev", "--frozen", "--no-hashes"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    full = subprocess.run([uv, "export", "--frozen", "--no-hashes"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout
    installed = {line.split("==")[0] for line in main.splitlines() if "==" in line}
    assert {"mcp", "pydantic", "pluggy"} <= installed and installed.isdisjoint(DEVELOPMENT_ONLY)
    assert {"pytest", "claude-agent-sdk"} <= {line.split("==")[0] for line in full.splitlines() if "==" in line}

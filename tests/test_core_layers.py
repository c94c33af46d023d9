"""Every core module belongs to a layer of the import-linter contract that
.ci/run checks (`uv run lint-imports`), so a new module cannot slip past it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [{name.strip() for name in layer.split(":")} for layer in contract["layers"]]


def test_every_core_module_has_a_layer() -> None:
    assigned = set().union(*_layers())
    modules = {f"pegboard.{p.stem}" for p in (ROOT / "core").glob("*.py") if p.stem != "__init__"}
    assert modules - assigned == set(), "add the new module to a layer in pyproject.toml"
    assert assigned - modules == set()

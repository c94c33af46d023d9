"""The core's layers are folders, each named in the import-linter contract
that .ci/run checks (`uv run lint-imports`); a module outside every layer
fails here, so a new module cannot slip past the contract."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
CORE = ROOT / "core"
FACADES = {"__init__", "paths", "cli", "testing"}


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [layer.strip() for layer in contract["layers"]]


def test_the_contract_names_one_folder_per_layer() -> None:
    layers = _layers()
    assert all(layer.count(".") == 1 and ":" not in layer and "|" not in layer for layer in layers), layers
    folders = {f"pegboard.{p.name}" for p in CORE.iterdir() if p.is_dir() and p.name.startswith("_")
               and (p / "__init__.py").exists()}
    assert set(layers) == folders, "each private folder of core/ is one layer of the contract, and only those"


def test_no_private_module_sits_at_the_top_of_core() -> None:
    top = {p.stem for p in CORE.glob("*.py")}
    assert top <= FACADES, f"put {sorted(top - FACADES)} in the folder of its layer (docs/architecture.md)"


def test_every_core_module_is_in_a_layer() -> None:
    layers = set(_layers())
    for path in CORE.rglob("*.py"):
        parts = path.relative_to(CORE).parts
        if parts[0] == "integrations" or len(parts) == 1:
            continue  # the public facades
        assert f"pegboard.{parts[0]}" in layers, f"{path.relative_to(ROOT)} is in no layer"

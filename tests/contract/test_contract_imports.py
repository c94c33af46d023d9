"""The contract names no engine: a module of the contract (core/_api/, the
types plugins and the engine agree on) imports only the contract and the
utilities (core/_util/), also under ``TYPE_CHECKING`` and inside functions; a
utility imports only utilities.

import-linter (pyproject.toml) leaves imports under ``TYPE_CHECKING`` out,
so this reads every ``import`` of the modules' source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
CONTRACT = sorted((CORE / "_api").glob("*.py"))
UTILITIES = sorted((CORE / "_util").glob("*.py"))

# What the contract still names outside it, each with why it cannot move yet.
NOT_YET = {
    ("pegboard._api.plugin_context", "pegboard._loading.config"):
        "PluginContext.settings is Settings, whose methods cut the config layers "
        "(UserScope, untrusted projects) with config loading's own helpers",
}


def module_of(path: Path) -> str:
    parts = path.relative_to(CORE).with_suffix("").parts
    return ".".join(["pegboard", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def core_imports(path: Path) -> set[str]:
    """The pegboard modules ``path`` imports anywhere in its source, by absolute name."""
    package = module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                if node.module:
                    found.add(".".join([*base, node.module]))
                else:
                    found.update(".".join([*base, alias.name]) for alias in node.names)
            elif node.module and node.module.split(".")[0] == "pegboard":
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "pegboard")
    return found


def outside(path: Path, allowed: tuple[str, ...]) -> set[str]:
    me = module_of(path)
    return {m for m in core_imports(path)
            if not m.startswith(allowed) and m != "pegboard" and (me, m) not in NOT_YET}


def test_the_layers_hold_modules() -> None:
    assert len(CONTRACT) > 10 and len(UTILITIES) > 5


@pytest.mark.parametrize("path", CONTRACT, ids=lambda p: p.stem)
def test_a_contract_module_imports_only_the_contract_and_utilities(path: Path) -> None:
    names = outside(path, ("pegboard._api", "pegboard._util"))
    assert names == set(), f"{module_of(path)} names {sorted(names)}, which are not contract or utility modules"


@pytest.mark.parametrize("path", UTILITIES, ids=lambda p: p.stem)
def test_a_utility_imports_only_utilities(path: Path) -> None:
    names = outside(path, ("pegboard._util",))
    assert names == set(), f"{module_of(path)} names {sorted(names)}, which are not utility modules"


def test_what_is_not_yet_in_the_contract_is_still_named() -> None:
    """An exception that no longer applies goes from the list."""
    stale = [pair for pair in NOT_YET if pair[1] not in core_imports(CORE / (pair[0].replace("pegboard.", "")
                                                                              .replace(".", "/") + ".py"))]
    assert stale == []

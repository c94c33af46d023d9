"""The contract names no engine: a contract module (the types plugins and the
engine agree on) imports only contract and utility modules, also under
``TYPE_CHECKING`` and inside functions; a utility imports only utilities.

import-linter (pyproject.toml) leaves imports under ``TYPE_CHECKING`` out,
so this reads every ``import`` of the modules' source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "core"

CONTRACT = ("_calls", "_catalogue", "_clients", "_decisions", "_doctor", "_hookspecs", "_levels", "_matchers",
            "_plugin_context", "_plugin_session", "_policy", "_records", "_schemas", "_tasks", "_tools",
            "_version", "_wire")
UTILITIES = ("_atomic", "_deprecation", "_dirs", "_errors", "_gitdirs", "_nearest", "_paths", "_redact", "_stdout")

# What the contract still names outside it, each with why it cannot move yet.
NOT_YET = {
    ("_plugin_context", "_config"): "PluginContext.settings is Settings, whose methods cut the config layers "
                                    "(UserScope, untrusted projects) with config loading's own helpers",
}


def core_imports(module: str) -> set[str]:
    """The core modules ``module`` imports anywhere in its source (``_x`` for ``from ._x import ...``)."""
    tree = ast.parse((CORE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import _x
                found.update(alias.name for alias in node.names)
            elif node.module and node.module.split(".")[0] == "pegboard":
                parts = node.module.split(".")
                found.add(parts[1] if len(parts) > 1 else "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "pegboard":
                    found.add(parts[1] if len(parts) > 1 else "__init__")
    return found


def test_the_lists_name_core_modules() -> None:
    missing = [m for m in (*CONTRACT, *UTILITIES) if not (CORE / f"{m}.py").is_file()]
    assert missing == []


@pytest.mark.parametrize("module", CONTRACT)
def test_a_contract_module_imports_only_the_contract_and_utilities(module: str) -> None:
    outside = {m for m in core_imports(module) - {*CONTRACT, *UTILITIES} if (module, m) not in NOT_YET}
    assert outside == set(), f"core/{module}.py names {sorted(outside)}, which are not contract or utility modules"


@pytest.mark.parametrize("module", UTILITIES)
def test_a_utility_imports_only_utilities(module: str) -> None:
    outside = core_imports(module) - set(UTILITIES)
    assert outside == set(), f"core/{module}.py names {sorted(outside)}, which are not utility modules"


def test_what_is_not_yet_in_the_contract_is_still_named() -> None:
    """An exception that no longer applies goes from the list."""
    stale = [pair for pair in NOT_YET if pair[1] not in core_imports(pair[0])]
    assert stale == []

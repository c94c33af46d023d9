"""Keep the exported API and the hook documentation honest."""

from __future__ import annotations

import re
from pathlib import Path

import pegboard
from pegboard import _hookspecs

ROOT = Path(__file__).parent.parent


def test_exported_names() -> None:
    assert pegboard.__all__ == sorted([
        "Answer", "CallInfo", "Catalogue", "CatalogueTool", "Check", "ConfigError", "Decision", "Grant",
        "ImageContent", "PermissionRequest", "PluginContext", "Policy", "PreCall", "ResourceContent", "Rule",
        "Session", "Settings", "TextContent", "Tool", "ToolContext", "ToolResult", "Toolbox", "Vote",
        "clamp_policy", "hookimpl", "hookspec", "policy_for",
    ])
    for name in pegboard.__all__:
        assert getattr(pegboard, name) is not None
    assert set(dir(pegboard)) >= set(pegboard.__all__)


def test_exported_names_are_defined_in_private_modules() -> None:
    for name in pegboard.__all__:
        module = getattr(getattr(pegboard, name), "__module__", "pegboard._")
        assert module.startswith("pegboard._") or module.startswith("pluggy."), (name, module)


def hook_names() -> list[str]:
    return [name for name in dir(_hookspecs) if name.startswith("pegboard_")]


def test_every_hook_is_documented_with_an_example() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    for name in hook_names():
        assert re.search(rf"^### `{name}", guide, re.M), f"{name} has no heading in docs/plugins.md"


def test_every_hook_is_exercised_by_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").glob("test_*.py"))
    plugins = "\n".join(p.read_text() for p in (ROOT / "plugins").rglob("*.py"))
    for name in hook_names():
        assert name in tests or name in plugins, f"nothing exercises {name}"

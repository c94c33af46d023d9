"""The core knows no plugin's names or fields: no string in core/'s code
(docstrings and comments aside) names a built-in plugin, the mcp plugin's
``mcp__`` tools or ``.mcp.json``, or the fs plugin's path fields. Plugins
declare such things through the public API (tool namespaces, protected
paths, a matcher's ``path_input``)."""

from __future__ import annotations

import ast
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").is_file()}
FIELDS = {"file_path", "notebook_path"}
# A string that happens to equal a plugin's name and means something else.
NOT_A_PLUGIN = {("main.py", "shell")}  # `pegboard completion SHELL`: bash, zsh or fish


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        # an attribute's docstring: a bare string right after an assignment
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for stmt in stmts:
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        found.add(id(stmt.value))
    return found


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        text = node.value
        named = text in BUILTINS and (path.name, text) not in NOT_A_PLUGIN
        if named or text in FIELDS or text.startswith("mcp__") or ".mcp.json" in text:
            out.append(f"{path.name}:{node.lineno}: {text!r}")
    return out


@pytest.mark.slow
def test_the_core_names_no_plugin_and_no_plugins_field() -> None:
    offences = [o for path in sorted((ROOT / "core").rglob("*.py")) for o in _offences(path)]
    assert offences == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "_sample.py"
    sample.write_text('"""A docstring naming mcp__x and .mcp.json is fine."""\n'
                      'X = "mcp__x"\nY = ("fs", "notebook_path")\n', encoding="utf-8")
    assert [o.split(": ", 1)[1] for o in _offences(sample)] == ["'mcp__x'", "'fs'", "'notebook_path'"]

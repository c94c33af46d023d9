""""Always allow" previews count files through the matcher's own
``path_input(path)``, whatever the tool calls its path field: the core
knows no plugin's field names."""

from __future__ import annotations

import fnmatch
import os
import types
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pegboard import Tool, Toolbox, hookimpl


class PublishInput(BaseModel):
    target: str


class TargetMatcher:
    def __init__(self, pattern: str, with_paths: bool) -> None:
        self.pattern = pattern
        if with_paths:
            self.path_input = lambda path: {"target": path}

    def matches(self, request: Any) -> bool:
        return fnmatch.fnmatch(os.path.basename(str(request.input.get("target", ""))), self.pattern)

    def describe(self) -> str:
        return f"publishes targets named {self.pattern}"


def publisher(with_paths: bool) -> types.SimpleNamespace:
    def register(register: Any) -> None:
        register(Tool(name="Publish", handler=lambda a, c: "ok", input_model=PublishInput, permission="workspace"))

    def matcher(rule: Any) -> TargetMatcher | None:
        return TargetMatcher(rule.specifier, with_paths) if rule.tool == "Publish" and rule.specifier else None

    return types.SimpleNamespace(pegboard_register_tools=hookimpl(register), pegboard_rule_matcher=hookimpl(matcher))


def test_a_matcher_with_path_input_gets_its_files_counted(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    for name in ("a.pub", "b.pub", "c.txt"):
        (root / name).write_text("x")
    toolbox = Toolbox.load(cwd=root, plugins=[], extra_plugins={"publisher": publisher(True)})
    text = toolbox.permissions.preview("Publish(*.pub)", toolbox.session("default"))
    assert "Publish on 2 files in the working directories" in text and "a.pub" in text and "c.txt" not in text


def test_a_matcher_without_it_is_described(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    (root / "a.pub").write_text("x")
    toolbox = Toolbox.load(cwd=root, plugins=[], extra_plugins={"publisher": publisher(False)})
    text = toolbox.permissions.preview("Publish(*.pub)", toolbox.session("default"))
    assert "Publish publishes targets named *.pub" in text and "files" not in text


def test_fs_path_rules_are_counted_through_their_matcher(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    (root / "docs").mkdir()
    for name in ("docs/a.md", "docs/b.md", "notes.md"):
        (root / name).write_text("x")
    toolbox = Toolbox.load(cwd=root, plugins=["fs"])
    text = toolbox.permissions.preview("Edit(docs/**)", toolbox.session("default"))
    assert "Edit on 2 files in the working directories" in text and "notes.md" not in text

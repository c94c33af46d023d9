"""Atomic writes and deletes of user skills, including a write that fails half way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pegboard.plugins.skills._store import atomic_write_text, remove_skill_folder


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "s" / "SKILL.md"
    atomic_write_text(path, "one\n")
    atomic_write_text(path, "two\n")
    assert path.read_text(encoding="utf-8") == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["SKILL.md"]


def test_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s" / "SKILL.md"
    atomic_write_text(path, "original\n")

    def broken_replace(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(path, "new\n")
    assert path.read_text(encoding="utf-8") == "original\n"
    assert [p.name for p in path.parent.iterdir()] == ["SKILL.md"]


def test_remove_refuses_folders_not_directly_in_the_root(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    nested = root / "a" / "b"
    nested.mkdir(parents=True)
    with pytest.raises(ValueError):
        remove_skill_folder(nested, root)
    with pytest.raises(ValueError):
        remove_skill_folder(tmp_path, root)
    assert nested.exists()


def test_remove_deletes_contents_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    folder = root / "gone"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("x", encoding="utf-8")
    (folder / "scripts" / "a.sh").write_text("x", encoding="utf-8")
    remove_skill_folder(folder, root)
    assert list(root.iterdir()) == []

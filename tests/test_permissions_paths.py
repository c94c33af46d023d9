"""Path facts the engine relies on: resolving, containment, and the
protected-path matcher, each checked against its reference."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pathspec
import pytest

from pegboard._config import DEFAULT_PROTECTED
from pegboard._paths import _realpath, is_within, relative_posix, resolve_path
from pegboard._protected import path_matcher


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path))
    (root / "real" / "sub").mkdir(parents=True)
    (root / "real" / "sub" / "f.txt").write_text("x")
    (root / "outside").mkdir()
    (root / "link").symlink_to(root / "real")
    (root / "real" / "escape").symlink_to(root / "outside")
    (root / "dangling").symlink_to(root / "outside" / "not-yet")
    (root / "loop").symlink_to(root / "loop")
    (root / "file").write_text("x")
    return root


NAMES = ["real", "link", "escape", "dangling", "loop", "file", "missing", "..", ".", "sub", "f.txt"]


def test_fast_realpath_agrees_with_the_reference(tree: Path) -> None:
    checked = 0
    for depth in (1, 2, 3):
        for parts in itertools.product(NAMES, repeat=depth):
            path = os.path.join(str(tree), *parts)
            assert _realpath(path) == os.path.realpath(path), path
            checked += 1
    assert checked > 1000


def test_resolve_follows_symlinks_out_of_the_tree(tree: Path) -> None:
    assert resolve_path("link/escape/new.txt", tree) == tree / "outside" / "new.txt"
    assert resolve_path("dangling", tree) == tree / "outside" / "not-yet"
    assert resolve_path(str(tree / "link" / "sub" / "f.txt"), Path("/")) == tree / "real" / "sub" / "f.txt"
    with pytest.raises(ValueError, match="NUL"):
        resolve_path("a\x00b", tree)


@pytest.mark.parametrize("path, directory", [
    ("/srv/app", "/srv/app"), ("/srv/app/x", "/srv/app"), ("/srv/app2", "/srv/app"), ("/srv", "/srv/app"),
    ("/x", "/"), ("/", "/"), ("/srv/app/", "/srv/app"), ("/srv/app/x/y", "/srv/app/"),
])
def test_containment_agrees_with_pathlib(path: str, directory: str) -> None:
    try:
        reference: str | None = Path(path).relative_to(Path(directory)).as_posix()
    except ValueError:
        reference = None
    assert is_within(Path(path), Path(directory)) == (reference is not None)
    assert relative_posix(Path(path), Path(directory)) == reference


def test_protected_matcher_agrees_with_pathspec() -> None:
    patterns = [*DEFAULT_PROTECTED, ".git", "secrets/**", "secrets", "*.tfstate", "infra/prod/**", "infra/prod"]
    fast = path_matcher(patterns)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    rels = [".git", ".git/config", "a/.git/HEAD", ".gitignore", "x.git", ".github/x", ".ssh", ".ssh/id",
            ".bashrc", "a/.bashrc", ".bashrc.bak", ".config/fish/config.fish", "a/.config/fish/x",
            "secrets", "secrets/k", "a/secrets/k", "s.tfstate", "a/b/s.tfstate", "infra/prod/x",
            "a/infra/prod/x", "infra/dev/x", ".pegboard/config.toml", ".mcp.json", "a/.mcp.json",
            ".gitconfig", "src/main.py", ".profile", ".zshrc", "docs/.zshenv"]
    for rel in rels:
        assert fast(rel) == spec.match_file(rel), rel
    # With a negation the order of lines matters: pathspec decides.
    negated = [*patterns, "!.mcp.json"]
    assert not path_matcher(negated)(".mcp.json") and path_matcher(negated)(".git/config")

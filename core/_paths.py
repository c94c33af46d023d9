"""Path facts the permission engine and plugins share: resolve, contain, name."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["is_within", "resolve_path", "rule_path"]


def resolve_path(path: str | os.PathLike[str], root: Path) -> Path:
    """The real path: ``~`` expanded, relative to ``root``, symlinks followed
    (also in the parents of a path that does not exist yet).

    ``ValueError`` for a NUL byte, which no real path contains.
    """
    text = os.fspath(path)
    if "\x00" in text:
        raise ValueError("path contains a NUL byte")
    p = Path(os.path.expanduser(text))
    if not p.is_absolute():
        p = root / p
    return Path(os.path.realpath(p))


def is_within(path: Path, directory: Path) -> bool:
    """Component-wise containment: /srv/app2 is not within /srv/app."""
    try:
        path.relative_to(directory)
    except ValueError:
        return False
    return True


def rule_path(path: Path) -> str:
    """A path as a permission rule writes it: ``//abs/path`` for absolute."""
    return "/" + path.as_posix()

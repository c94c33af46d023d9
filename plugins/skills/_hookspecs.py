"""The hook the skills plugin declares (``pegboard_add_hooks``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pegboard import hookspec


@hookspec
def pegboard_skill_dirs() -> Iterable[Path] | None:
    """Folders of skills this plugin ships (each holds ``<name>/SKILL.md``)."""

"""Writing and deleting skills in the user's skills folder, atomically.

A reader (another session listing skills, ``pegboard skills list``) must
never see half a ``SKILL.md`` nor half a deleted folder: a file is written to
a temporary name in the same folder and renamed over the old one; a folder is
renamed to a hidden name (which the catalogue skips) before it is removed.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from pegboard.paths import atomic_write, resolve_path

__all__ = ["atomic_write_text", "remove_skill_folder"]


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(resolve_path(path, path.parent), text)


def remove_skill_folder(folder: Path, skills_root: Path) -> None:
    """Remove one skill's folder, which must sit directly in ``skills_root``.

    A symlinked skill folder is unlinked, never followed: the person linked
    a folder that lives elsewhere, and deleting the skill must not delete it.
    """
    if folder.parent != skills_root:
        raise ValueError(f"{folder} is not directly inside {skills_root}")
    if folder.is_symlink():
        folder.unlink()
        return
    doomed = folder.with_name(f".deleting-{folder.name}-{uuid.uuid4().hex[:8]}")
    os.rename(folder, doomed)
    shutil.rmtree(doomed)

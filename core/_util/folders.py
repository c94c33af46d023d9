"""pegboard's own folders and the system policy file's place (public through
``pegboard.paths``); kept apart from config loading so that light modules,
the public API among them, can name them.

Files at rest: every folder pegboard makes for its data is 0700 and every
file in it that holds state (databases, spools, tokens) 0600. Modes are fixed
each time pegboard opens them, not only when it creates them: a sandboxed
command, a session's folder or another tool may have made ``data_dir()``
first with the umask's 0755, and SQLite gives ``-wal`` and ``-shm`` the mode
of their database.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "config_dir", "data_dir", "data_folders", "narrow_data_dir",
           "policy_path", "private_dir", "tighten", "wider_than"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def config_dir() -> Path:
    """pegboard's user config folder (``config.toml``, ``granted.toml``, ``descriptions/``)."""
    return Path(platformdirs.user_config_dir("pegboard"))


def data_dir() -> Path:
    """pegboard's user data folder (sessions' files, plugins' stores)."""
    return Path(platformdirs.user_data_dir("pegboard"))


def policy_path() -> Path:
    return Path(os.environ.get("PEGBOARD_POLICY", "/etc/pegboard/policy.toml"))


def tighten(path: Path, mode: int) -> None:
    """Take from ``path`` every permission bit outside ``mode`` (0700 for a
    folder, 0600 for a file), when it is there, is no symlink and is ours.
    A chmod that fails leaves the mode as it was: ``pegboard doctor`` names
    what stays wider (``wider_than``)."""
    try:
        found = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(found.st_mode) or found.st_uid != os.geteuid():
        return
    now = stat.S_IMODE(found.st_mode)
    if now & ~mode:
        try:
            os.chmod(path, now & mode, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass  # reported by doctor, which checks the same bits


def wider_than(path: Path, mode: int) -> int | None:
    """``path``'s permission bits when they are wider than ``mode``; None
    when they are not, or it is not there."""
    try:
        now = stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None
    return now if now & ~mode else None


def private_dir(path: Path) -> Path:
    """``path`` made (with its missing parents) as a private folder: each folder
    made for it 0700, and, when it lies in ``data_dir()``, the data dir and
    every folder between tightened to 0700 as well, however they were made."""
    base = data_dir()
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    try:
        inside = path.relative_to(base)
    except ValueError:
        return path
    folder = base
    tighten(folder, PRIVATE_DIR_MODE)
    for part in inside.parts:
        folder = folder / part
        tighten(folder, PRIVATE_DIR_MODE)
    return path


def data_folders() -> list[Path]:
    """The folders of ``data_dir()`` that hold data others must not read: the
    data dir, each folder directly in it (``sessions/``, ``audit-spool/``, a
    plugin's own), and each store's spool folder. Symlinks are left out."""
    base = data_dir()
    found = [base]
    for folder in (base, base / "audit-spool"):
        try:
            found += sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            continue
    return list(dict.fromkeys(found))


def narrow_data_dir() -> None:
    """At each start (the store's first use in a process): ``data_folders()``
    0700, whoever made them, and the spooled audit rows 0600."""
    for folder in data_folders():
        tighten(folder, PRIVATE_DIR_MODE)
        if folder.parent.name == "audit-spool":
            for spooled in folder.glob("*.jsonl"):
                tighten(spooled, PRIVATE_FILE_MODE)

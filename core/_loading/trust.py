"""Trusted folders: the project roots whose files the person has agreed to
let widen what pegboard may do.

Kept in the person's own config folder (``trusted-folders.toml``), never in
a checkout, keyed by the root's real path: a symbolic link to a trusted
folder is that folder, and a folder inside a trusted one is not trusted by
it (a nested project root, a vendored repository, is a checkout of its own).
The project grants ("always allow for this project") live beside it, one
file per project, so that no repository can ship them.

Stdlib, ``_layercache`` and ``_grants`` only: the tool listing's cache key names these files.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from .grants import update_toml
from .layer_cache import read_regular_file


__all__ = ["TRUST_FILE", "TrustStore", "TrustedFolder", "project_grants_file", "project_key"]

TRUST_FILE = "trusted-folders.toml"
_HEADER = ("Folders whose project files pegboard applies (`pegboard trust DIR`, `pegboard trust --revoke DIR`).\n"
           "Each path is a folder's real path; folders inside it are not covered.")


@dataclass(frozen=True, slots=True)
class TrustedFolder:
    """A folder the person trusts (``pegboard trust``), and since when."""

    path: str
    since: datetime | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "since": self.since.isoformat() if self.since else None,
                "exists": os.path.isdir(self.path)}


def real_root(root: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(root)))


class TrustStore:
    """``<config dir>/trusted-folders.toml``: a ``[[folder]]`` table per trusted root."""

    def __init__(self, config_dir: Path):
        self.path = config_dir / TRUST_FILE

    def folders(self) -> list[TrustedFolder]:
        """Every trusted folder. ``ValueError`` (naming the file) for a file
        that does not parse: nobody's trust is guessed."""

        try:
            raw, _ = read_regular_file(self.path)  # a FIFO there is an error, not a wait
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ValueError(f"{self.path}: cannot read: {exc.strerror}") from None
        import tomllib  # here: a start-up with no trusted folder parses nothing

        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise ValueError(f"{self.path}: not valid TOML: {exc}") from None
        return _folders(data, self.path)

    def is_trusted(self, root: str | os.PathLike[str]) -> bool:
        real = real_root(root)
        return any(f.path == real for f in self.folders())

    def trust(self, root: str | os.PathLike[str]) -> bool:
        """Trust ``root`` (its real path); False when it already was."""
        real = real_root(root)
        added = False

        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal added
            folders = _folders(data, self.path)
            if any(f.path == real for f in folders):
                return None
            added = True
            return _dump([*folders, TrustedFolder(real, datetime.now(timezone.utc).replace(microsecond=0))])

        self._update(change)
        return added

    def revoke(self, root: str | os.PathLike[str]) -> bool:
        """Stop trusting ``root``; False when it was not trusted."""
        real = real_root(root)
        removed = False

        def change(data: dict[str, Any]) -> dict[str, Any] | None:
            nonlocal removed
            folders = _folders(data, self.path)
            kept = [f for f in folders if f.path != real]
            removed = len(kept) != len(folders)
            return _dump(kept) if removed else None

        self._update(change)
        return removed

    def _update(self, change: Any) -> None:
        update_toml(self.path, change, _HEADER)


def _folders(data: dict[str, Any], path: Path) -> list[TrustedFolder]:
    entries = data.get("folder", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path}: folder: expected an array of tables ([[folder]])")
    out = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ValueError(f"{path}: folder[{index}]: expected a table with path = \"/real/path\"")
        since = entry.get("since")
        out.append(TrustedFolder(entry["path"], since if isinstance(since, datetime) else None))
    return out


def _dump(folders: list[TrustedFolder]) -> dict[str, Any]:
    return {"folder": [{"path": f.path, **({"since": f.since} if f.since else {})} for f in folders]}


def project_key(root: str | os.PathLike[str]) -> str:
    """A folder name for the project at ``root``: its last component (for a
    person looking) and a digest of its real path (so two projects never
    share one)."""
    real = real_root(root)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real)).strip("._")[:40] or "root"
    return f"{name}-{hashlib.sha256(real.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


def project_grants_file(config_dir: Path, root: str | os.PathLike[str]) -> Path:
    """Where "always allow for this project" is kept: in the person's own
    config folder, under the project's key."""
    return config_dir / "projects" / project_key(root) / "granted.toml"

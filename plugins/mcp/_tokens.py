"""Where a server's OAuth sign-in is kept: one file per server URL in
pegboard's data directory (never in config or caches), readable by the user
only. Tokens are never logged or shown.

Light: listings read whether a server is signed in without the SDK.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pegboard.paths import atomic_write, resolve_path

from ._config import ServerSpec

__all__ = ["TokenFile"]


class TokenFile:
    def __init__(self, folder: Path, spec: ServerSpec) -> None:
        key = hashlib.sha256((spec.config.url or "").encode()).hexdigest()[:16]
        self.folder = folder / "oauth"  # folder: the plugin's own (own_folder(context))
        self.path = self.folder / f"{spec.name}-{key}.json"

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        """Atomically, created 0600 in a 0700 folder: no moment when another user could read it."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.folder, 0o700)
        atomic_write(resolve_path(self.path, self.folder), json.dumps(data), default_mode=0o600)

    def update(self, **values: Any) -> None:
        data = self.read()
        data.update(values)
        self.write(data)

    def signed_in(self) -> bool:
        return bool(self.read().get("tokens"))

    def delete(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

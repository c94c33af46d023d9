"""A cache of the tool inventory, so that ``pegboard tools list`` answers
without importing plugins or building a single pydantic model.

The cache is keyed on everything the inventory depends on: the interpreter
and the mtimes of ``sys.path`` folders (an install or uninstall changes
them), every config file that applies, ``PEGBOARD_*`` and ``XDG_*``
variables, the source files of the core and of each plugin package, and any
file a plugin said its tools depend on (``PluginContext.watch``). Anything
unreadable means a miss, never a stale answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from .._loading.layer_cache import package_files as _package_files
from .._loading.layer_cache import stamp as _stat
from .._loading.trust import TRUST_FILE, project_grants_file
from .._util.atomic import atomic_write
from .._util.path_facts import resolve_path

__all__ = ["load_rows", "store_rows"]

FORMAT = 4  # 2: the core's modules moved into folders


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pegboard"


def _config_candidates(root: Path, explicit: Path | None) -> list[str]:
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    user = Path(config_home) / "pegboard"
    chosen = explicit or (Path(os.environ["PEGBOARD_CONFIG"]) if os.environ.get("PEGBOARD_CONFIG") else None)
    paths = [user / "config.toml", user / "granted.toml", root / ".pegboard" / "config.toml",
             root / ".pegboard" / "granted.toml", user / TRUST_FILE, project_grants_file(user, root),
             Path(os.environ.get("PEGBOARD_POLICY", "/etc/pegboard/policy.toml")),
             user / "plugins"]  # one-file plugins: a file added or removed changes the folder's time
    if chosen is not None:
        paths.append(chosen)
    return [str(p) for p in paths]


def _key(root: Path, explicit: Path | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k.startswith(("PEGBOARD_", "XDG_")) or k == "HOME"}
    return {
        "format": FORMAT,
        "python": sys.executable,
        "root": str(root),
        "sys_path": [[p, _stat(p)] for p in sys.path],
        "env": sorted(env.items()),
        "config": [[p, _stat(p)] for p in _config_candidates(root, explicit)],
    }


def _cache_file(root: Path, explicit: Path | None, mode: str | None) -> Path:
    digest = hashlib.sha256(f"{root}\0{explicit}\0{sys.executable}\0{mode}".encode()).hexdigest()[:20]
    return _cache_dir() / f"inventory-{digest}.json"


def load_rows(root: Path, explicit: Path | None,
              mode: str | None = None) -> tuple[list[dict[str, Any]], list[str]] | None:
    """The cached rows and plugins' notes, or None when anything they depend
    on changed. ``mode``: the listing's ``--mode`` (its rows say what tools
    may do in it, so each mode has its own)."""
    root = Path(os.path.realpath(root))
    try:
        data = json.loads(_cache_file(root, explicit, mode).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("key") != json.loads(json.dumps(_key(root, explicit))):
        return None
    for path, stamp in data.get("files", []):
        if _stat(path) != stamp:
            return None
    rows, notes = data.get("rows"), data.get("notes", [])
    return (rows, notes) if isinstance(rows, list) and isinstance(notes, list) else None


def store_rows(root: Path, explicit: Path | None, rows: list[dict[str, Any]], modules: list[str],
               watched: list[Path], notes: list[str] | None = None, mode: str | None = None) -> None:
    root = Path(os.path.realpath(root))
    files = []
    for name in ["pegboard", *modules]:
        files += _package_files(name)
    files += [str(p) for p in watched]
    payload = {"key": _key(root, explicit), "files": [[f, _stat(f)] for f in files], "rows": rows, "notes": notes or []}
    target = _cache_file(root, explicit, mode)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(resolve_path(target, target.parent), json.dumps(payload))
    except (OSError, ValueError):
        pass  # a cache we cannot write only costs speed

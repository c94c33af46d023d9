"""On-disk state: which project servers the user approved, and each server's
last known tool list (so listing tools never starts a server).

Light: imported at registration. Files are written atomically (temp + rename)
so two pegboard processes never leave a half-written file behind.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pegboard.paths import atomic_write, resolve_path

from ._config import APPROVALS_FILE, ServerSpec

__all__ = ["Approvals", "CachedTool", "ToolCache", "ToolListing", "tool_hash"]


def tool_hash(name: str, description: str | None, input_schema: Mapping[str, Any]) -> str:
    """What the model is shown of a tool: a change to any of it is a new tool."""
    raw = json.dumps({"name": name, "description": description or "", "input_schema": input_schema},
                     sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(resolve_path(path, path.parent), json.dumps(data, indent=1, sort_keys=True))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class Approvals:
    """Project servers the user approved, keyed by project path and definition hash.

    Editing a server's command, args, env or URL changes its hash, so an
    approval never carries over to a definition the user has not seen."""

    def __init__(self, folder: Path):
        """``folder``: the plugin's own folder (``own_folder(context)``)."""
        self.path = folder / APPROVALS_FILE

    def _load(self) -> dict[str, dict[str, str]]:
        data = _read_json(self.path)
        return data if isinstance(data, dict) else {}

    def is_approved(self, spec: ServerSpec) -> bool:
        if not spec.project_defined:
            return True
        return self._load().get(str(spec.root), {}).get(spec.name) == spec.def_hash

    def approve(self, spec: ServerSpec) -> None:
        data = self._load()
        data.setdefault(str(spec.root), {})[spec.name] = spec.def_hash
        _write_json(self.path, data)

    def revoke(self, spec: ServerSpec) -> None:
        data = self._load()
        data.get(str(spec.root), {}).pop(spec.name, None)
        _write_json(self.path, data)


class CachedTool(BaseModel):
    # Built when a recorded tool list is first read, not at import: a start-up
    # with no MCP server configured never builds it.
    model_config = ConfigDict(defer_build=True)

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    hash: str
    # The definition the user last let run; differs from `hash` while a
    # changed tool waits for the user to approve the change.
    approved_hash: str

    @property
    def changed(self) -> bool:
        return self.hash != self.approved_hash


class ToolListing(BaseModel):
    model_config = ConfigDict(defer_build=True)

    server: str
    def_hash: str
    updated: float
    tools: list[CachedTool]


class ToolCache:
    """Each server's tool list as last seen, one JSON file per server definition."""

    def __init__(self, folder: Path):
        """``folder``: the plugin's own folder (``own_folder(context)``)."""
        self.folder = folder / "tools"
        # Each record as last parsed, with the file's identity then: a
        # 1,000-tool record is 2 MB of JSON, and one toolbox asks for it
        # more than once (is it recorded? its tools). Writes replace the
        # file (a new inode), so a rewritten record is parsed again.
        self._parsed: dict[Path, tuple[tuple[int, int, int], ToolListing]] = {}

    def path(self, spec: ServerSpec) -> Path:
        return self.folder / f"{spec.name}-{spec.cache_key}.json"

    def load(self, spec: ServerSpec, *, fresh: bool = False) -> ToolListing | None:
        """The recorded list, parsed once per version of its file (``fresh``:
        parsed again, for a caller that changes it). Treat it as read-only."""
        path = self.path(spec)
        try:
            info = path.stat()
        except OSError:
            return None
        identity = (info.st_ino, info.st_mtime_ns, info.st_size)
        known = self._parsed.get(path)
        if known is not None and known[0] == identity and not fresh:
            return known[1]
        data = _read_json(path)
        if data is None:
            return None
        try:
            listing = ToolListing.model_validate(data)
        except ValidationError:
            return None  # a damaged cache is only a cache: the next start rewrites it
        self._parsed[path] = (identity, listing)
        return listing

    def update(self, spec: ServerSpec, live: Iterable[tuple[Any, ...]]) -> tuple[
            ToolListing, list[str]]:
        """Record the live tool list; return it and the names whose definition changed.

        A tool seen for the first time is approved as it is (the server was
        approved as a whole). A known tool whose hash moved keeps its old
        ``approved_hash`` until a call to it is approved."""
        before = self.load(spec)
        old = {t.name: t for t in before.tools} if before else {}
        tools: list[CachedTool] = []
        changed: list[str] = []
        for name, description, schema, *more in live:
            title = more[0] if more else None
            h = tool_hash(name, description, schema)
            prev = old.get(name)
            approved = prev.approved_hash if prev is not None else h
            if approved != h:
                changed.append(name)
            tools.append(CachedTool(name=name, title=title, description=description, input_schema=dict(schema),
                                    hash=h, approved_hash=approved))
        listing = ToolListing(server=spec.name, def_hash=spec.def_hash, updated=time.time(), tools=tools)
        _write_json(self.path(spec), listing.model_dump(mode="json"))
        self.failure_path(spec).unlink(missing_ok=True)
        return listing, changed

    # --- servers that could not be listed ----------------------------------

    def failure_path(self, spec: ServerSpec) -> Path:
        return self.folder / f"{spec.name}-{spec.cache_key}.failed.json"

    def record_failure(self, spec: ServerSpec, reason: str, sign_in: bool = False, scope: str | None = None) -> None:
        """Remembered so that every toolbox does not wait on a server that is
        down; ``sign_in``: it answered that the person must sign in first
        (``scope``: with at least this scope)."""
        _write_json(self.failure_path(spec), {"when": time.time(), "reason": reason, "sign_in": sign_in,
                                              "scope": scope})

    def sign_in_scope(self, spec: ServerSpec) -> str | None:
        """The scope the server last asked for more of (a step-up), if any."""
        data = _read_json(self.failure_path(spec))
        scope = data.get("scope") if isinstance(data, dict) and data.get("sign_in") else None
        return scope if isinstance(scope, str) else None

    def needs_sign_in(self, spec: ServerSpec) -> bool:
        """The server's last answer was that the person must sign in, and no
        tool list was recorded since."""
        data = _read_json(self.failure_path(spec))
        if not isinstance(data, dict) or not data.get("sign_in"):
            return False
        listing = self.load(spec)
        return listing is None or float(data.get("when", 0)) >= listing.updated

    def last_failure(self, spec: ServerSpec) -> tuple[float, str] | None:
        data = _read_json(self.failure_path(spec))
        if not isinstance(data, dict) or not isinstance(data.get("when"), (int, float)):
            return None
        return float(data["when"]), str(data.get("reason", ""))

    def approve_tool(self, spec: ServerSpec, name: str, h: str) -> None:
        listing = self.load(spec, fresh=True)
        if listing is None:
            return
        for tool in listing.tools:
            if tool.name == name and tool.hash == h:
                tool.approved_hash = h
        _write_json(self.path(spec), listing.model_dump(mode="json"))

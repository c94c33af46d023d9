"""Checkpoints: the content a file had before each fs write, so a session can be rewound.

Layout, under ``<data dir>/sessions/<session id>/checkpoints/`` (findable by
session id, also after the process is gone):

* ``index.jsonl``: one JSON object per write, in order;
* ``blobs/<sha256>``: previous contents, stored once however often they recur.

Rewinding to checkpoint N puts every file written at or after N back to the
content it had just before its first such write (deleting files that did
not exist then). Restores are themselves checkpointed, so a rewind can be
undone.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import _safeio

__all__ = [
    "Checkpoint",
    "CheckpointStore",
    "list_checkpoints",
    "restore_checkpoint",
    "session_checkpoints_dir",
    "sessions_root",
]


@dataclass(frozen=True)
class Checkpoint:
    id: int
    time: float
    path: str
    tool: str
    existed: bool
    blob: str | None
    size: int
    mode: int | None

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.time))
        before = f"{self.size:,} bytes" if self.existed else "did not exist"
        if self.existed and self.blob is None:
            before += ", too large to keep"
        return f"{self.id:>4}  {when}  {self.tool:<12} {self.path}  (before: {before})"


def sessions_root() -> Path:
    from pegboard.paths import data_dir

    return data_dir() / "sessions"


def session_checkpoints_dir(session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id in (".", ".."):
        raise ValueError(f"{session_id!r} is not a session id")
    return sessions_root() / session_id / "checkpoints"


def list_checkpoints(session_id: str) -> list[Checkpoint]:
    """A session's checkpoints, oldest first (empty when it wrote nothing)."""
    return CheckpointStore(session_checkpoints_dir(session_id)).entries()


def restore_checkpoint(session_id: str, checkpoint: int, *, only: Path | None = None) -> list[str]:
    """Rewind a session's files to before ``checkpoint``; returns what was done."""
    return CheckpointStore(session_checkpoints_dir(session_id)).rewind(checkpoint, only=only)


class CheckpointStore:
    def __init__(self, root: Path, *, max_bytes: int = 20 * 1024 * 1024) -> None:
        self.root = root
        self.max_bytes = max_bytes

    @property
    def _index(self) -> Path:
        return self.root / "index.jsonl"

    def save(self, path: Path, old: bytes | None, tool: str, mode: int | None = None) -> Checkpoint:
        """Record ``old`` (None: the file did not exist) as the content before this write."""
        (self.root / "blobs").mkdir(parents=True, exist_ok=True, mode=0o700)
        blob: str | None = None
        if old is not None and len(old) <= self.max_bytes:
            blob = hashlib.sha256(old).hexdigest()
            target = self.root / "blobs" / blob
            if not target.exists():
                _safeio.atomic_write(Path(os.path.realpath(target.parent)) / blob, old, default_mode=0o600)
        cp = Checkpoint(
            id=len(self.entries()) + 1, time=time.time(), path=os.fspath(path), tool=tool,
            existed=old is not None, blob=blob, size=len(old) if old is not None else 0, mode=mode,
        )
        # one short line per append with O_APPEND: concurrent writers cannot interleave inside it
        fd = os.open(self._index, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (json.dumps(asdict(cp)) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cp

    def entries(self) -> list[Checkpoint]:
        try:
            lines = self._index.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out: list[Checkpoint] = []
        for line in lines:
            try:
                out.append(Checkpoint(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a torn last line after a crash: skip it, keep the rest
        return out

    def content(self, cp: Checkpoint) -> bytes | None:
        if cp.blob is None:
            return None
        return (self.root / "blobs" / cp.blob).read_bytes()

    def rewind(self, to: int, *, only: Path | None = None) -> list[str]:
        """Put files back as they were before checkpoint ``to``; returns what was done."""
        cps = self.entries()
        if not any(cp.id == to for cp in cps):
            raise ValueError(f"no checkpoint {to}; there are {len(cps)}")
        first: dict[str, Checkpoint] = {}
        for cp in cps:
            if cp.id >= to and cp.path not in first and (only is None or cp.path == os.fspath(only)):
                first[cp.path] = cp
        done: list[str] = []
        for path_text, cp in first.items():
            path = Path(path_text)
            if cp.existed and cp.blob is None:
                done.append(f"skipped {path}: its earlier content was too large to keep")
                continue
            current = _current(path)
            self.save(path, current, "restore")
            real = Path(os.path.realpath(path))
            if not cp.existed:
                if current is not None:
                    os.unlink(real)
                done.append(f"removed {path} (it did not exist before)")
                continue
            data = self.content(cp)
            assert data is not None
            _safeio.atomic_write(real, data, allow_multilinked=True,
                                 default_mode=cp.mode if cp.mode is not None else 0o644)
            done.append(f"restored {path} ({len(data):,} bytes)")
        return done


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None

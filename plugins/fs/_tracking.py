"""Which files the model has seen, so Edit/Write never clobber what it has not.

A file counts as read at the stamp it had when it was shown. Writing it
needs that stamp to still hold: a formatter, another program or a person may
have changed it since, and an edit made against stale content would silently
undo their change. The model is also told, once per change, that a file it
read has changed on disk.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ReadTracker", "Stamp", "tracker"]

# Stat-ing every file ever read on every call would grow without bound.
_MAX_WATCHED = 256


@dataclass(frozen=True)
class Stamp:
    """What identifies one version of a file without reading it.

    mtime_ns and size catch edits; the inode catches an atomic replace
    (rename over) that kept both.
    """

    mtime_ns: int
    size: int
    ino: int
    dev: int

    @classmethod
    def of(cls, st: os.stat_result) -> Stamp:
        return cls(st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


class ReadTracker:
    def __init__(self) -> None:
        self._reads: OrderedDict[Path, Stamp] = OrderedDict()
        self._noted: dict[Path, Stamp | None] = {}

    def record(self, path: Path, st: os.stat_result | None = None) -> None:
        """``path`` (resolved) was shown to the model as it is now."""
        st = st if st is not None else _stat(path)
        if st is None:
            return
        self._reads[path] = Stamp.of(st)
        self._reads.move_to_end(path)
        self._noted.pop(path, None)
        while len(self._reads) > _MAX_WATCHED:
            old, _ = self._reads.popitem(last=False)
            self._noted.pop(old, None)

    def forget(self, path: Path) -> None:
        self._reads.pop(path, None)
        self._noted.pop(path, None)

    def was_read(self, path: Path) -> bool:
        return path in self._reads

    def refusal(self, path: Path, st: os.stat_result | None, tool: str) -> str | None:
        """Why ``tool`` may not write ``path`` now, or None when it may."""
        stamp = self._reads.get(path)
        if stamp is None:
            return (f"{tool} refused: you have not read {path} in this session. Read it first "
                    f"(the Read tool), then retry; this keeps you from overwriting content you have not seen.")
        if st is None:
            return f"{tool} refused: {path} was deleted after you read it. Check with Read or Glob before writing."
        if Stamp.of(st) != stamp:
            return (f"{tool} refused: {path} changed on disk after you read it (another program or a person "
                    f"edited it). Read it again, then redo your change against the current content.")
        return None

    def changes(self, skip: Path | None = None) -> list[str]:
        """One note per change of a file read earlier, each said once."""
        notes: list[str] = []
        for path, stamp in list(self._reads.items()):
            if path == skip:
                continue
            st = _stat(path)
            now = Stamp.of(st) if st is not None else None
            if now == stamp or self._noted.get(path, stamp) == now:
                continue
            self._noted[path] = now
            if now is None:
                notes.append(f"Note: {path}, which you read earlier, has been deleted.")
            else:
                notes.append(f"Note: {path}, which you read earlier, has changed on disk since. "
                             f"Read it again before relying on or editing it.")
        return notes


def tracker(state: dict[str, Any]) -> ReadTracker:
    """The session's tracker, kept in the plugin's per-session state."""
    found = state.get("reads")
    if not isinstance(found, ReadTracker):
        found = state["reads"] = ReadTracker()
    return found

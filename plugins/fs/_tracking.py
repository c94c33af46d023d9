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
from typing import Any

__all__ = ["ReadTracker", "Stamp", "tracker"]

# Stat-ing every file ever read on every call would grow without bound.
_MAX_WATCHED = 256


# What identifies one version of a file without reading it: (mtime_ns,
# size, inode, device). mtime_ns and size catch edits; the inode catches an
# atomic replace (rename over) that kept both. A plain tuple: made on every
# Read, where a NamedTuple's Python-level __new__ cost three times as much
# (and a frozen dataclass four ``object.__setattr__`` calls).
Stamp = tuple[int, int, int, int]


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


class ReadTracker:
    """Resolved paths shown to the model, each with its stamp then. Keyed by
    the path's text, so a handler holding a ``str`` and one holding a
    ``Path`` find the same entry (and a str hashes without pathlib)."""

    def __init__(self) -> None:
        self._reads: OrderedDict[str, Stamp] = OrderedDict()
        self._noted: dict[str, Stamp | None] = {}

    def record(self, path: str | os.PathLike[str], st: os.stat_result | None = None) -> None:
        """``path`` (resolved) was shown to the model as it is now."""
        key = os.fspath(path)
        st = st if st is not None else _stat(key)
        if st is None:
            return
        self._reads[key] = _stamp(st)
        self._reads.move_to_end(key)
        self._noted.pop(key, None)
        while len(self._reads) > _MAX_WATCHED:
            old, _ = self._reads.popitem(last=False)
            self._noted.pop(old, None)

    def shown(self, path: str, st: os.stat_result) -> list[str]:
        """``record(path, st)`` then ``changes(skip=path)``, in one call: what
        every Read does. Nothing to say when ``path`` is the only file read."""
        reads = self._reads
        reads[path] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)  # _stamp(st), without its call
        reads.move_to_end(path)
        if self._noted:
            self._noted.pop(path, None)
        if len(reads) == 1:
            return []
        while len(reads) > _MAX_WATCHED:
            old, _ = reads.popitem(last=False)
            self._noted.pop(old, None)
        return self.changes(skip=path)

    def forget(self, path: str | os.PathLike[str]) -> None:
        key = os.fspath(path)
        self._reads.pop(key, None)
        self._noted.pop(key, None)

    def was_read(self, path: str | os.PathLike[str]) -> bool:
        return os.fspath(path) in self._reads

    def refusal(self, path: str | os.PathLike[str], st: os.stat_result | None, tool: str) -> str | None:
        """Why ``tool`` may not write ``path`` now, or None when it may."""
        stamp = self._reads.get(os.fspath(path))
        if stamp is None:
            return (f"{tool} refused: you have not read {path} in this session. Read it first "
                    f"(the Read tool), then retry; this keeps you from overwriting content you have not seen.")
        if st is None:
            return f"{tool} refused: {path} was deleted after you read it. Check with Read or Glob before writing."
        if _stamp(st) != stamp:
            return (f"{tool} refused: {path} changed on disk after you read it (another program or a person "
                    f"edited it). Read it again, then redo your change against the current content.")
        return None

    def changes(self, skip: str | os.PathLike[str] | None = None) -> list[str]:
        """One note per change of a file read earlier, each said once."""
        notes: list[str] = []
        skipped = os.fspath(skip) if skip is not None else None
        for path, stamp in list(self._reads.items()):
            if path == skipped:
                continue
            st = _stat(path)
            now = _stamp(st) if st is not None else None
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

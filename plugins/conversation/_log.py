"""Where a session's conversation log is kept, and reading it back.

A durable session's log is the table ``conversation_messages`` in the store
(one row per message, keyed by session id and index, deleted with the
session), so another process that resumes the session reads it. Any other
session keeps it in the plugin's session state, for the session's life. A
host that keeps the conversation itself answers ``pegboard_conversation_messages``
instead; its list is read the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pegboard import PluginContext, PluginStore, Session, StoreSchema

    from ._messages import Message

__all__ = ["HeldLog", "Log", "StoredLog", "TABLE", "append", "has_log", "log_of", "normalized", "store_schema"]

TABLE = "conversation_messages"
_PAGE = 500  # messages read per query while searching: the scan never holds the whole log
_STATE_LOG = "log"
_STATE_SEEN = "recorded"


def store_schema() -> StoreSchema:
    from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text

    from pegboard import StoreSchema

    metadata = MetaData()
    Table(TABLE, metadata,
          Column("session_id", String(64), primary_key=True),
          Column("idx", Integer, primary_key=True, autoincrement=False),
          Column("role", String(32), nullable=False),
          Column("parts", Text, nullable=False),  # JSON list of the message's parts
          Column("recorded_at", Float, nullable=False))
    return StoreSchema(metadata=metadata, version=1)


def _table() -> Any:
    from sqlalchemy import column, table

    return table(TABLE, column("session_id"), column("idx"), column("role"), column("parts"), column("recorded_at"))


class Log:
    """A conversation log, read with blocking calls (a handler runs them on a worker thread)."""

    def count(self) -> int:
        raise NotImplementedError

    def read(self, start: int, count: int) -> list[Message]:
        """Messages ``#start`` to ``#start + count - 1`` (those that exist)."""
        raise NotImplementedError

    def scan(self) -> Iterator[Message]:
        """Every message, oldest first."""
        raise NotImplementedError


class HeldLog(Log):
    """A log held in memory: a session's own, or the host's list."""

    def __init__(self, messages: Sequence[tuple[str, list[str]]]) -> None:
        self._messages = list(messages)  # a snapshot: the host may record while a search runs

    def count(self) -> int:
        return len(self._messages)

    def read(self, start: int, count: int) -> list[Message]:
        chosen = self._messages[start - 1: start - 1 + count]
        return [(start + i, role, parts) for i, (role, parts) in enumerate(chosen)]

    def scan(self) -> Iterator[Message]:
        for i, (role, parts) in enumerate(self._messages, 1):
            yield i, role, parts


class StoredLog(Log):
    """A durable session's log, in the store."""

    def __init__(self, store: PluginStore, session_id: str) -> None:
        self._store = store
        self._session_id = session_id

    def count(self) -> int:
        from sqlalchemy import func, select

        rows = _table()
        with self._store.begin(read_only=True) as conn:
            found = conn.execute(select(func.max(rows.c.idx)).where(rows.c.session_id == self._session_id)).scalar()
        return int(found or 0)

    def read(self, start: int, count: int) -> list[Message]:
        from sqlalchemy import select

        rows = _table()
        with self._store.begin(read_only=True) as conn:
            found = conn.execute(select(rows.c.idx, rows.c.role, rows.c.parts)
                                 .where(rows.c.session_id == self._session_id, rows.c.idx >= start,
                                        rows.c.idx < start + count)
                                 .order_by(rows.c.idx)).all()
        return [(idx, role, json.loads(parts)) for idx, role, parts in found]

    def scan(self) -> Iterator[Message]:
        after = 0
        while True:
            page = self.read(after + 1, _PAGE)
            yield from page
            if len(page) < _PAGE:
                return
            after = page[-1][0]


def normalized(messages: Sequence[Any], where: str = "") -> list[tuple[str, list[str]]]:
    """``messages`` as (role, parts); ``ValueError`` naming the message that is
    not one (``message 2 of 3{where}: ...``)."""
    from ._messages import message_parts  # only where messages are read: a listing never is

    out = []
    for number, message in enumerate(messages, 1):
        try:
            out.append(message_parts(message))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"message {number} of {len(messages)}{where}: {exc}") from None
    return out


def has_log(context: PluginContext, session: Session) -> bool:
    """Whether messages were recorded for ``session``: in this process, or
    (a durable session) in the store by an earlier one. The store is asked
    once per session object; ``append`` says yes from then on."""
    state = session.plugin_state(context.name)
    seen = state.get(_STATE_SEEN)
    if seen is None:
        seen = state[_STATE_SEEN] = session.durable and StoredLog(context.store, session.id).count() > 0
    return bool(seen)


def log_of(context: PluginContext, session: Session) -> Log:
    """The log ``append`` records into for ``session``."""
    if session.durable:
        return StoredLog(context.store, session.id)
    return HeldLog(session.plugin_state(context.name).get(_STATE_LOG, []))


def append(context: PluginContext, session: Session, messages: Sequence[Any]) -> list[int]:
    """Record ``messages`` after the ones already in ``session``'s log; their indices."""
    entries = normalized(messages, " given to record")
    if not entries:
        return []
    state = session.plugin_state(context.name)
    if session.durable:
        indices = _insert(context.store, session.id, entries)
    else:
        held = state.setdefault(_STATE_LOG, [])
        first = len(held) + 1
        held.extend(entries)
        indices = list(range(first, first + len(entries)))
    if not state.get(_STATE_SEEN):
        state[_STATE_SEEN] = True
        session.emit("catalogue.changed", {"reason": "conversation recorded"})
    return indices


def _insert(store: PluginStore, session_id: str, entries: list[tuple[str, list[str]]]) -> list[int]:
    from sqlalchemy import func, insert, select

    rows = _table()
    now = time.time()
    with store.begin() as conn:
        # Writers to one session take turns, so that each reads the last index
        # the previous one wrote: SQLite's writers do already (every writing
        # transaction takes the write lock); on PostgreSQL a lock per session,
        # held until the transaction ends.
        if store.backend == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"{TABLE}:{session_id}"))))
        last = conn.execute(select(func.max(rows.c.idx)).where(rows.c.session_id == session_id)).scalar()
        first = int(last or 0) + 1
        conn.execute(insert(rows), [
            {"session_id": session_id, "idx": first + i, "role": role,
             "parts": json.dumps(parts, ensure_ascii=False), "recorded_at": now}
            for i, (role, parts) in enumerate(entries)])
    return list(range(first, first + len(entries)))

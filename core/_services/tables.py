"""The core's own tables in the store (imported only when the store is used)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Connection, Float, Index, Integer, MetaData, String, Table, Text, text

from .._api.plugin_context import PluginStore, StoreSchema

__all__ = ["audit", "core_schema", "count_upto", "ensure_indexes", "metadata", "pending", "scratchpad",
           "sessions"]

SESSION_ID = String(64)

metadata = MetaData()

sessions = Table(
    "pegboard_sessions", metadata,
    Column("id", SESSION_ID, primary_key=True),
    Column("parent_id", SESSION_ID, nullable=True, index=True),
    Column("root", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_active", Float, nullable=False, index=True),
)

scratchpad = Table(
    "pegboard_scratchpad", metadata,
    Column("session_id", SESSION_ID, primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("text", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)

audit = Table(
    "pegboard_audit", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False, index=True),
    Column("session_id", SESSION_ID, nullable=False),
    Column("parent_id", SESSION_ID, nullable=True),  # a sub-agent's parent session (version 2)
    Column("call_id", String(100), nullable=True),
    Column("tool", String(200), nullable=False),
    Column("decision", String(8), nullable=False),
    Column("reason", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("source_kind", String(20), nullable=False),
    Column("mode", String(40), nullable=False),
    Column("answer", String(20), nullable=True),
    Column("host", String(200), nullable=True),
    Column("input_digest", String(64), nullable=False),
    Column("input_preview", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    # who the call was made for (Session.client), added to an older table on first use (no version step)
    Column("client", String(200), nullable=True),
    Index("ix_pegboard_audit_session", "session_id", "at"),
    Index("ix_pegboard_audit_tool", "tool", "at"),
    # Added after version 3 without a version of its own: made on first use (ensure_indexes).
    Index("ix_pegboard_audit_decision", "decision", "at"),
)


# Calls waiting for a person's approval (docs/embedding.md); deleted with their session.
pending = Table(
    "pegboard_pending", metadata,
    Column("id", String(40), primary_key=True),
    Column("session_id", SESSION_ID, nullable=False, index=True),
    Column("call_id", String(100), nullable=False),
    Column("tool", String(200), nullable=False),
    Column("input", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("suggestions", Text, nullable=False),
    Column("status", String(10), nullable=False),
    Column("answer", Text, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("resolved_at", Float, nullable=True),
    # who the call was made for (Session.requester: a client, or the local user); added to an older
    # table on first use (no version step)
    Column("requester", String(200), nullable=True, index=True),
)


def _no_step(conn: Connection) -> None:
    """A version whose change is only new tables, which are created after the steps."""


def _audit_parent(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE pegboard_audit ADD COLUMN parent_id VARCHAR(64)"))


def core_schema() -> StoreSchema:
    # 1: sessions, scratchpad, audit; 2: the audit records a child session's parent; 3: pending calls.
    # Nullable columns added since (a pending call's requester, an audit row's client) need no version:
    # the store adds them on first use, and older code keeps working beside them.
    return StoreSchema(metadata=metadata, version=3, upgrades={2: _audit_parent, 3: _no_step})


# (store, table) whose indexes this process has seen made.
_INDEXED: set[tuple[str, str]] = set()


def ensure_indexes(store: PluginStore, table: Table) -> None:
    """Make the indexes of ``table`` that its database lacks, once per
    process and store: an index added to a table after its schema version
    (``CREATE INDEX IF NOT EXISTS``, on SQLite and PostgreSQL) needs no
    version of its own, so no existing database is refused until ``pegboard
    store migrate`` for it. Only when one is missing is a writing
    transaction taken."""
    from sqlalchemy import inspect
    from sqlalchemy.schema import CreateIndex

    key = (store.url, table.name)
    if key in _INDEXED:
        return
    with store.begin(read_only=True) as conn:
        have = {found["name"] for found in inspect(conn).get_indexes(table.name)}
    missing = [index for index in table.indexes if index.name not in have]
    if missing:
        with store.begin() as conn:
            for index in missing:
                conn.execute(CreateIndex(index, if_not_exists=True))
    _INDEXED.add(key)


def count_upto(conn: Connection, query: Any, cap: int) -> int:
    """How many rows ``query`` (a select) gives, counting no further than
    ``cap``: what "N more" lines say without counting a million rows."""
    from sqlalchemy import func, select

    return int(conn.execute(select(func.count()).select_from(query.limit(cap).subquery())).scalar() or 0)

"""The core's own tables in the store (imported only when the store is used)."""

from __future__ import annotations

from sqlalchemy import Column, Connection, Float, Index, Integer, MetaData, String, Table, Text, text

from ._store import StoreSchema

__all__ = ["audit", "core_schema", "metadata", "scratchpad", "sessions"]

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
    Index("ix_pegboard_audit_session", "session_id", "at"),
    Index("ix_pegboard_audit_tool", "tool", "at"),
)


def _audit_parent(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE pegboard_audit ADD COLUMN parent_id VARCHAR(64)"))


def core_schema() -> StoreSchema:
    # 1: sessions, scratchpad, audit; 2: the audit records a child session's parent.
    return StoreSchema(metadata=metadata, version=2, upgrades={2: _audit_parent})

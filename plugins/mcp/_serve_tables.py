"""The mcp plugin's tables in the store, for ``pegboard serve`` as a team's
server: its API keys (hashed), its replicas, the calls a replica waits on
for an approver, and the secret its replicas share. Imported only when the
store is used (it imports SQLAlchemy)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, MetaData, String, Table, Text

from pegboard import StoreSchema

__all__ = ["keys", "replicas", "secrets", "store_schema", "waiting"]

metadata = MetaData()

# One row per key ever made; a revoked or expired key stays, so that the audit's client names one.
keys = Table(
    "mcp_serve_keys", metadata,
    Column("id", String(32), primary_key=True),       # the public part of the key: pbk_<id>_<secret>
    Column("name", String(200), nullable=False, index=True),  # the client identity its requests carry
    Column("secret_sha256", String(64), nullable=False),
    Column("level", String(20), nullable=True),       # the most it allows (None: no limit beyond the mode)
    Column("approver", Boolean, nullable=False),      # may answer pending calls on the approvals page
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("revoked_at", Float, nullable=True),
)

# Each serve --http process that shares the store, and when it last said it was alive.
replicas = Table(
    "mcp_serve_replicas", metadata,
    Column("id", String(80), primary_key=True),
    Column("address", Text, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("last_seen", Float, nullable=False, index=True),
)

# A pending call a client's request waits on, and the replica holding that request
# (None: the request went away; another replica may take the call over or settle it).
waiting = Table(
    "mcp_serve_waiting", metadata,
    Column("pending_id", String(40), primary_key=True),
    Column("session_id", String(64), nullable=False, index=True),
    Column("client", String(200), nullable=True),
    Column("replica", String(80), nullable=True, index=True),
    Column("updated_at", Float, nullable=False),
)

# Secrets the replicas share (the approvals page's cookie and form key), made by the first that needs one.
secrets = Table(
    "mcp_serve_secrets", metadata,
    Column("name", String(40), primary_key=True),
    Column("value", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
)


def store_schema() -> StoreSchema:
    return StoreSchema(metadata=metadata, version=1)

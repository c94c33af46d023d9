"""The schedule plugin's tables in the store (schema version 1).

* ``schedule_jobs``: one row per job (a cron job or a session's wake-up),
  with its next firing (``next_due``, ``next_fire``) and, while a worker
  holds it, the lease (``lease_owner``, ``lease_until``). A job's row is the
  one truth about what fires next: a worker claims the row, delivers, then
  advances the row (or deletes it after the last firing) in one transaction.
* ``schedule_firings``: what became of each firing (delivered or failed),
  keyed by the firing's id; kept 30 days.
* ``schedule_workers``: each worker's last sign of life and last claim, for
  ``pegboard doctor`` and ``pegboard schedule list``.

Both ``session_id`` tables go with their session when it is deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pegboard import StoreSchema

__all__ = ["firings", "jobs", "schema", "workers"]

SCHEMA_VERSION = 1

jobs: Any = None
firings: Any = None
workers: Any = None
_metadata: Any = None


def _define() -> Any:
    global jobs, firings, workers, _metadata
    if _metadata is not None:
        return _metadata
    from sqlalchemy import Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text

    metadata = MetaData()
    jobs = Table(
        "schedule_jobs", metadata,
        Column("id", String(16), primary_key=True),
        Column("session_id", String(64), nullable=False, index=True),
        Column("kind", String(8), nullable=False),            # "cron" or "wakeup"
        Column("cron", String(200)),
        Column("timezone", String(64), nullable=False),
        Column("prompt", Text, nullable=False),
        Column("reason", Text),                               # a wake-up's reason
        Column("noop", Boolean),                              # a wake-up: nothing changed that iteration
        Column("recurring", Boolean, nullable=False),
        Column("root", Text, nullable=False),                 # the session's project root
        Column("created_at", Float, nullable=False),
        Column("expires_at", Float),
        Column("next_due", Float, nullable=False),
        Column("next_fire", Float, nullable=False),
        Column("is_last", Boolean, nullable=False),
        Column("attempts", Integer, nullable=False, default=0),
        Column("lease_owner", String(100)),
        Column("lease_until", Float),
        Column("fired", Integer, nullable=False, default=0),
        Column("last_fired_at", Float),
        Index("schedule_jobs_due", "next_fire"),
        Index("schedule_jobs_lease", "lease_owner"),
    )
    firings = Table(
        "schedule_firings", metadata,
        Column("id", String(64), primary_key=True),          # job id @ due time (UTC)
        Column("job_id", String(16), nullable=False, index=True),
        Column("session_id", String(64), nullable=False, index=True),
        Column("due_at", Float, nullable=False),
        Column("done_at", Float, nullable=False, index=True),
        Column("status", String(12), nullable=False),        # delivered or failed
        Column("worker", String(100), nullable=False),
        Column("attempts", Integer, nullable=False),
        Column("missed", Integer, nullable=False),
        Column("detail", Text),
    )
    workers = Table(
        "schedule_workers", metadata,
        Column("id", String(100), primary_key=True),
        Column("host", String(255), nullable=False),
        Column("pid", Integer, nullable=False),
        Column("started_at", Float, nullable=False),
        Column("seen_at", Float, nullable=False, index=True),
        Column("last_claim_at", Float),
        Column("stopped_at", Float),
        Column("claimed", Integer, nullable=False, default=0),
        Column("delivered", Integer, nullable=False, default=0),
        Column("failed", Integer, nullable=False, default=0),
    )
    _metadata = metadata
    return metadata


def schema() -> StoreSchema:
    from pegboard import StoreSchema

    return StoreSchema(metadata=_define(), version=SCHEMA_VERSION)


def tables() -> tuple[Any, Any, Any]:
    """(jobs, firings, workers), defined on first use."""
    _define()
    return jobs, firings, workers

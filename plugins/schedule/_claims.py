"""The worker's SQL: claim due firings under a lease, record what became of
each and advance its job, keep leases alive, and say the worker is there.

Each function runs inside one transaction its caller opened. On PostgreSQL
the claim takes the due rows with ``FOR UPDATE SKIP LOCKED``, so workers
racing for the same rows each skip the others' instead of waiting; on SQLite
every writing transaction holds the database's write lock (``BEGIN
IMMEDIATE``), so claims simply take turns. Either way a row is claimable
only when its fire time has come and no live lease holds it, and the claim
stamps it with the worker and a lease in the same statement.

A firing is the pair (job, ``next_due``). Recording a delivery advances
``next_due`` (or deletes a job whose last firing it was) only where this
worker still holds the lease on that same due time, so a firing is recorded
once, and no worker can claim it again afterwards.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Any

from ._display import firing_id
from ._firing import Firing
from ._jobs import Job
from ._tables import tables
from ._timing import catch_up

__all__ = ["Claimed", "WorkerStats", "claim", "firing_of", "heartbeat", "log", "prune", "record", "worker_identity"]

FIRING_LOG_DAYS = 30
WORKER_ROWS_DAYS = 7


@dataclass(frozen=True)
class Claimed:
    """A job this worker holds, and the firing it is delivering."""

    job: Job
    firing: Firing


def worker_identity() -> tuple[str, str, int]:
    """(worker id, host, pid): ``host:pid:random``, unique across machines."""
    import secrets

    host = socket.gethostname()
    pid = os.getpid()
    return f"{host}:{pid}:{secrets.token_hex(2)}", host, pid


# The worker's hot statements, written once for PostgreSQL and SQLite and run
# on the driver's own cursor inside the caller's transaction: a firing then
# costs its round trips, little more (SQLAlchemy's statement machinery cost
# about as much again as the database did). Parameters are ``:name``.
_JOB_COLUMNS = ("id, session_id, kind, cron, timezone, prompt, reason, noop, recurring, root, created_at, "
                "expires_at, next_due, next_fire, is_last, attempts, lease_owner, lease_until, fired, last_fired_at")
_CLAIM = ("UPDATE schedule_jobs SET lease_owner = :worker, lease_until = :until, attempts = attempts + 1 "
          "WHERE id IN (SELECT id FROM schedule_jobs WHERE next_fire <= :now "
          "AND (lease_until IS NULL OR lease_until <= :now) ORDER BY next_fire LIMIT {limit}{lock}) "
          f"RETURNING {_JOB_COLUMNS}")
_MINE = "id = :job AND lease_owner = :worker AND next_due = :due"
_RETRY = f"UPDATE schedule_jobs SET lease_owner = NULL, lease_until = :not_before WHERE {_MINE}"
_FINISH = f"DELETE FROM schedule_jobs WHERE {_MINE}"
_ADVANCE = ("UPDATE schedule_jobs SET next_due = :next_due_at, next_fire = :next_fire_at, is_last = :next_last, "
            "attempts = 0, lease_owner = NULL, lease_until = NULL, fired = fired + 1, last_fired_at = :fired_at "
            f"WHERE {_MINE}")
_LOG = ("INSERT INTO schedule_firings (id, job_id, session_id, due_at, done_at, status, worker, attempts, missed, "
        "detail) VALUES (:id, :job_id, :session_id, :due_at, :done_at, :status, :worker, :attempts, :missed, "
        ":detail) ON CONFLICT (id) DO NOTHING")


class _Sql:
    """The statements in one driver's dialect, and how to run them."""

    def __init__(self, dialect: Any):
        self.native = (dialect.name, dialect.driver) in (("postgresql", "psycopg"), ("sqlite", "pysqlite"))
        # Workers racing for the same rows skip each other's on PostgreSQL; SQLite's
        # writers hold the database's lock, one at a time.
        self.lock = " FOR UPDATE SKIP LOCKED" if dialect.name == "postgresql" else ""
        self.pyformat = dialect.name == "postgresql" and self.native
        self._claims: dict[int, str] = {}
        self.retry, self.finish, self.advance, self.log = (self._form(q) for q in (_RETRY, _FINISH, _ADVANCE, _LOG))

    def _form(self, query: str) -> str:
        return re.sub(r":(\w+)", r"%(\1)s", query) if self.pyformat else query

    def claim(self, limit: int) -> str:
        found = self._claims.get(limit)
        if found is None:
            # LIMIT written into the statement: as a parameter, PostgreSQL's generic plan for a
            # prepared statement assumes a large share of the rows
            found = self._claims[limit] = self._form(_CLAIM.format(limit=int(limit), lock=self.lock))
        return found

    def run(self, conn: Any, query: str, params: dict[str, Any]) -> Any:
        """A cursor after running ``query`` in ``conn``'s transaction."""
        if self.native:
            cursor = conn.connection.driver_connection.cursor()
            cursor.execute(query, params)
            return cursor
        from sqlalchemy import text

        return conn.execute(text(query), params)


_dialects: dict[tuple[str, str], _Sql] = {}


def sql_for(conn: Any) -> _Sql:
    key = (conn.dialect.name, conn.dialect.driver)
    found = _dialects.get(key)
    if found is None:
        found = _dialects[key] = _Sql(conn.dialect)
    return found


def claim(conn: Any, worker: str, now: float, lease_s: float, limit: int) -> list[Claimed]:
    """Take up to ``limit`` due firings for ``worker``, each leased until
    ``now + lease_s``: one statement."""
    sql = sql_for(conn)
    rows = sql.run(conn, sql.claim(limit), {"now": now, "worker": worker, "until": now + lease_s}).fetchall()
    claimed = []
    for job in sorted((Job.from_values(tuple(row)) for row in rows), key=lambda j: (j.next_fire, j.id)):
        claimed.append(Claimed(job, firing_of(job, now)))
    return claimed


def firing_of(job: Job, now: float) -> Firing:
    """The firing a claimed job delivers: its due time, and the later ones
    that came due while no worker ran (it stands for them)."""
    missed, following = catch_up(job.timing, job.next_due, now)
    return Firing(
        id=firing_id(job.id, job.next_due), job_id=job.id, session_id=job.session_id, kind=job.kind,
        prompt=job.prompt, due_at=job.next_due, zone=job.timezone, root=job.root, cron=job.cron,
        recurring=job.recurring, reason=job.reason, noop=job.noop, missed=missed,
        last=job.is_last or following is None, attempt=job.attempts, claimed_at=now)


def retry_delay(attempts: int) -> float:
    """30 s after a first failed delivery, doubling to at most 15 minutes."""
    return float(min(30 * 2 ** max(attempts - 1, 0), 900))


def record(conn: Any, held: Claimed, worker: str, now: float, status: str, detail: str | None,
           max_attempts: int, lease_s: float) -> str:
    """What became of a delivery: ``delivered`` and ``failed`` (after the
    last attempt) advance the job to its next firing still ahead, or delete
    it after its last; a failure with attempts left releases the job until
    its retry time. Returns what was recorded: ``delivered``, ``failed``,
    ``retry``, or ``lost`` when the job was deleted meanwhile or another
    worker took it over (the firing is logged all the same)."""
    sql = sql_for(conn)
    job = held.job
    mine = {"job": job.id, "worker": worker, "due": job.next_due}
    if status == "failed" and job.attempts < max_attempts:
        changed = sql.run(conn, sql.retry, {**mine, "not_before": now + retry_delay(job.attempts)}).rowcount
        return "retry" if changed else "lost"
    _skipped, following = catch_up(job.timing, job.next_due, now)
    if following is None:
        changed = sql.run(conn, sql.finish, mine).rowcount
    else:
        changed = sql.run(conn, sql.advance, {**mine, "next_due_at": following.due, "next_fire_at": following.fire,
                                              "next_last": following.last, "fired_at": now}).rowcount
    log(conn, held.firing, worker, now, status, detail)
    return status if changed else "lost"


def log(conn: Any, firing: Firing, worker: str, now: float, status: str, detail: str | None) -> None:
    """One row of ``schedule_firings`` per firing id (a repeat is ignored)."""
    sql = sql_for(conn)
    sql.run(conn, sql.log, {"id": firing.id, "job_id": firing.job_id, "session_id": firing.session_id,
                            "due_at": firing.due_at, "done_at": now, "status": status, "worker": worker,
                            "attempts": firing.attempt, "missed": firing.missed, "detail": detail})


@dataclass
class WorkerStats:
    host: str
    pid: int
    started_at: float
    last_claim_at: float | None = None
    claimed: int = 0
    delivered: int = 0
    failed: int = 0


def heartbeat(conn: Any, worker: str, now: float, lease_s: float, stats: WorkerStats,
              stopped: bool = False) -> None:
    """Extend every lease this worker holds, and record that it is alive
    (and what it claimed) in ``schedule_workers``."""
    from sqlalchemy import update

    jobs, _, workers = tables()
    if not stopped:
        conn.execute(update(jobs).where(jobs.c.lease_owner == worker).values(lease_until=now + lease_s))
    values = {"seen_at": now, "last_claim_at": stats.last_claim_at, "claimed": stats.claimed,
              "delivered": stats.delivered, "failed": stats.failed, "stopped_at": now if stopped else None}
    if not conn.execute(update(workers).where(workers.c.id == worker).values(**values)).rowcount:
        conn.execute(workers.insert().values(id=worker, host=stats.host, pid=stats.pid,
                                             started_at=stats.started_at, **values))


def prune(conn: Any, now: float) -> None:
    """Forget firings older than 30 days and workers unseen for 7."""
    from sqlalchemy import delete

    _, firings, workers = tables()
    conn.execute(delete(firings).where(firings.c.done_at < now - FIRING_LOG_DAYS * 86400))
    conn.execute(delete(workers).where(workers.c.seen_at < now - WORKER_ROWS_DAYS * 86400))

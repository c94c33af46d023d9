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


class _Statements:
    """The worker's hot statements, built once with bound parameters: a
    firing then costs its round trips, not the building of its SQL."""

    def __init__(self) -> None:
        from sqlalchemy import Integer, bindparam, delete, or_, select, update

        jobs, firings, _ = tables()
        self.jobs, self.firings = jobs, firings
        now: Any = bindparam("now")
        due = (select(jobs.c.id)
               .where(jobs.c.next_fire <= now, or_(jobs.c.lease_until.is_(None), jobs.c.lease_until <= now))
               .order_by(jobs.c.next_fire)
               # LIMIT written into the statement: as a parameter, PostgreSQL's generic plan for the
               # prepared statement assumes a large share of the rows
               .limit(bindparam("limit", type_=Integer(), literal_execute=True))
               .with_for_update(skip_locked=True))
        self.claim = (update(jobs).where(jobs.c.id.in_(due.scalar_subquery()))
                      .values(lease_owner=bindparam("worker"), lease_until=bindparam("until"),
                              attempts=jobs.c.attempts + 1)
                      .returning(*jobs.c))
        mine = (jobs.c.id == bindparam("job"), jobs.c.lease_owner == bindparam("worker"),
                jobs.c.next_due == bindparam("due"))
        self.retry = update(jobs).where(*mine).values(lease_owner=None, lease_until=bindparam("not_before"))
        self.finish = delete(jobs).where(*mine)
        self.advance = update(jobs).where(*mine).values(
            next_due=bindparam("next_due_at"), next_fire=bindparam("next_fire_at"), is_last=bindparam("next_last"),
            attempts=0, lease_owner=None, lease_until=None, fired=jobs.c.fired + 1,
            last_fired_at=bindparam("fired_at"))
        self._logs: dict[str, Any] = {}

    def log(self, dialect: str) -> Any:
        """An insert of a firing's row that leaves an existing one alone."""
        statement = self._logs.get(dialect)
        if statement is None:
            if dialect == "postgresql":
                from sqlalchemy.dialects import postgresql as dialect_sql
            else:
                from sqlalchemy.dialects import sqlite as dialect_sql  # type: ignore[no-redef]
            statement = dialect_sql.insert(self.firings).on_conflict_do_nothing(index_elements=["id"])
            self._logs[dialect] = statement
        return statement


_statements: _Statements | None = None


def statements() -> _Statements:
    global _statements
    if _statements is None:
        _statements = _Statements()
    return _statements


def claim(conn: Any, worker: str, now: float, lease_s: float, limit: int) -> list[Claimed]:
    """Take up to ``limit`` due firings for ``worker``, each leased until
    ``now + lease_s``: one statement."""
    taken = conn.execute(statements().claim,
                         {"now": now, "limit": limit, "worker": worker, "until": now + lease_s}).all()
    claimed = []
    for row in sorted(taken, key=lambda r: (r.next_fire, r.id)):
        job = Job.from_row(row)
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
    sql = statements()
    job = held.job
    mine = {"job": job.id, "worker": worker, "due": job.next_due}
    if status == "failed" and job.attempts < max_attempts:
        changed = conn.execute(sql.retry, {**mine, "not_before": now + retry_delay(job.attempts)}).rowcount
        return "retry" if changed else "lost"
    _skipped, following = catch_up(job.timing, job.next_due, now)
    if following is None:
        changed = conn.execute(sql.finish, mine).rowcount
    else:
        changed = conn.execute(sql.advance, {**mine, "next_due_at": following.due, "next_fire_at": following.fire,
                                             "next_last": following.last, "fired_at": now}).rowcount
    log(conn, held.firing, worker, now, status, detail)
    return status if changed else "lost"


def log(conn: Any, firing: Firing, worker: str, now: float, status: str, detail: str | None) -> None:
    """One row of ``schedule_firings`` per firing id (a repeat is ignored)."""
    _, firings, _ = tables()
    values = {"id": firing.id, "job_id": firing.job_id, "session_id": firing.session_id,
              "due_at": firing.due_at, "done_at": now, "status": status, "worker": worker,
              "attempts": firing.attempt, "missed": firing.missed, "detail": detail}
    name = conn.dialect.name
    if name in ("postgresql", "sqlite"):
        conn.execute(statements().log(name), values)
        return
    from sqlalchemy import select

    if conn.execute(select(firings.c.id).where(firings.c.id == firing.id)).first() is None:
        conn.execute(firings.insert().values(**values))


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

"""Jobs in the store: made by the tools, listed and deleted by the tools and
the operator. Each function takes a connection inside the caller's
transaction (``ctx.store.run(fn)``, ``store.begin()``)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, fields
from typing import Any

from ._tables import tables
from ._timing import MAX_AGE_S, JobTiming, Plan, first_plan

__all__ = ["MAX_JOBS", "Job", "JobLimit", "create_cron", "delete_job", "list_jobs", "set_wakeup",
           "stop_wakeups"]

MAX_JOBS = 50   # cron jobs per session, as Claude Code


class JobLimit(Exception):
    """The session already has ``MAX_JOBS`` jobs."""


@dataclass(frozen=True)
class Job:
    """A row of ``schedule_jobs``."""

    id: str
    session_id: str
    kind: str
    cron: str | None
    timezone: str
    prompt: str
    reason: str | None
    noop: bool | None
    recurring: bool
    root: str
    created_at: float
    expires_at: float | None
    next_due: float
    next_fire: float
    is_last: bool
    attempts: int
    lease_owner: str | None
    lease_until: float | None
    fired: int
    last_fired_at: float | None

    @classmethod
    def from_row(cls, row: Any) -> Job:
        mapping = row._mapping
        return cls(*[mapping[name] for name in _FIELDS])

    @classmethod
    def from_values(cls, values: tuple[Any, ...]) -> Job:
        """From the driver's own row, in column order (SQLite gives its
        booleans as 0 and 1)."""
        job = cls(*values)
        if not isinstance(job.recurring, bool) or not isinstance(job.is_last, bool):
            from dataclasses import replace

            job = replace(job, recurring=bool(job.recurring), is_last=bool(job.is_last),
                          noop=None if job.noop is None else bool(job.noop))
        return job

    @property
    def timing(self) -> JobTiming:
        return JobTiming(self.id, self.kind, self.cron, self.timezone, self.recurring, self.created_at,
                         self.expires_at)

    def in_flight(self, now: float) -> bool:
        """A worker holds it and may be delivering its firing right now."""
        return self.lease_owner is not None and (self.lease_until or 0) > now

    def to_json(self) -> dict[str, Any]:
        from ._display import firing_id, zone_iso

        return {
            "id": self.id, "session_id": self.session_id, "kind": self.kind, "cron": self.cron,
            "timezone": self.timezone, "prompt": self.prompt, "reason": self.reason,
            "recurring": self.recurring, "root": self.root,
            "created": zone_iso(self.created_at, self.timezone),
            "expires": zone_iso(self.expires_at, self.timezone) if self.expires_at else None,
            "next_firing_id": firing_id(self.id, self.next_due),
            "next_due": zone_iso(self.next_due, self.timezone),
            "next_fire": zone_iso(self.next_fire, self.timezone),
            "next_is_last": self.is_last, "attempts": self.attempts, "lease_owner": self.lease_owner,
            "lease_until": self.lease_until, "fired": self.fired,
            "last_fired": zone_iso(self.last_fired_at, self.timezone) if self.last_fired_at else None,
        }


_FIELDS = tuple(f.name for f in fields(Job))


def _new_id(conn: Any) -> str:
    from sqlalchemy import select

    jobs, _, _ = tables()
    while True:
        candidate = secrets.token_hex(4)
        if conn.execute(select(jobs.c.id).where(jobs.c.id == candidate)).first() is None:
            return candidate


def _lock_session(conn: Any, session_id: str) -> None:
    """Serialise job changes of one session (the 50-job cap, the one
    wake-up) across processes. SQLite's writing transactions already hold
    the database's write lock."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy import text

        key = int.from_bytes(hashlib.sha256(f"schedule:{session_id}".encode()).digest()[:8], "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})


def _insert(conn: Any, values: dict[str, Any], plan: Plan) -> Job:
    from sqlalchemy import select

    jobs, _, _ = tables()
    row = {**values, "next_due": plan.due, "next_fire": plan.fire, "is_last": plan.last, "attempts": 0,
           "lease_owner": None, "lease_until": None, "fired": 0, "last_fired_at": None}
    conn.execute(jobs.insert().values(**row))
    return Job.from_row(conn.execute(select(jobs).where(jobs.c.id == row["id"])).one())


def create_cron(conn: Any, *, session_id: str, cron: str, prompt: str, recurring: bool, zone: str, root: str,
                now: float) -> Job:
    """A cron job; ``JobLimit`` past ``MAX_JOBS`` cron jobs in the session,
    ``ValueError`` when the expression never matches."""
    from sqlalchemy import func, select

    jobs, _, _ = tables()
    _lock_session(conn, session_id)
    count = conn.execute(select(func.count()).select_from(jobs)
                         .where(jobs.c.session_id == session_id, jobs.c.kind == "cron")).scalar_one()
    if count >= MAX_JOBS:
        raise JobLimit(count)
    created = float(int(now))
    job_id = _new_id(conn)
    timing = JobTiming(job_id, "cron", cron, zone, recurring, created,
                       created + MAX_AGE_S if recurring else None)
    plan = first_plan(timing)
    if plan is None:
        raise ValueError(f"{cron!r} never matches a date in the next 50 years")
    return _insert(conn, {"id": job_id, "session_id": session_id, "kind": "cron", "cron": cron,
                          "timezone": zone, "prompt": prompt, "reason": None, "noop": None,
                          "recurring": recurring, "root": root, "created_at": created,
                          "expires_at": timing.expires_at}, plan)


def stop_wakeups(conn: Any, session_id: str) -> list[Job]:
    """Delete the session's pending wake-up (there is at most one)."""
    from sqlalchemy import delete, select

    jobs, _, _ = tables()
    _lock_session(conn, session_id)
    found = [Job.from_row(r) for r in conn.execute(
        select(jobs).where(jobs.c.session_id == session_id, jobs.c.kind == "wakeup"))]
    if found:
        conn.execute(delete(jobs).where(jobs.c.id.in_([j.id for j in found])))
    return found


def set_wakeup(conn: Any, *, session_id: str, prompt: str, reason: str, noop: bool, due: float, zone: str,
               root: str, now: float) -> tuple[Job, list[Job]]:
    """The session's next wake-up, replacing the one pending: (new, replaced)."""
    replaced = stop_wakeups(conn, session_id)
    job_id = _new_id(conn)
    created = float(int(now))
    job = _insert(conn, {"id": job_id, "session_id": session_id, "kind": "wakeup", "cron": None,
                         "timezone": zone, "prompt": prompt, "reason": reason, "noop": noop,
                         "recurring": False, "root": root, "created_at": created, "expires_at": None},
                  Plan(float(int(due)), float(int(due)), True))
    return job, replaced


def list_jobs(conn: Any, session_id: str | None = None) -> list[Job]:
    """Jobs by their next firing; one session's, or every one."""
    from sqlalchemy import select

    jobs, _, _ = tables()
    query = select(jobs).order_by(jobs.c.next_fire, jobs.c.id)
    if session_id is not None:
        query = query.where(jobs.c.session_id == session_id)
    return [Job.from_row(r) for r in conn.execute(query)]


def delete_job(conn: Any, job_id: str, session_id: str | None = None) -> Job | None:
    """Delete one job (only the session's own, given ``session_id``): the
    row it was, or None. A worker holding its firing finds the row gone when
    it confirms the lease just before delivering, and drops the firing."""
    from sqlalchemy import delete, select

    jobs, _, _ = tables()
    query = select(jobs).where(jobs.c.id == job_id)
    if session_id is not None:
        query = query.where(jobs.c.session_id == session_id)
    row = conn.execute(query).first()
    if row is None:
        return None
    conn.execute(delete(jobs).where(jobs.c.id == job_id))
    return Job.from_row(row)

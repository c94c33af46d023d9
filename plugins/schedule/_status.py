"""What the operator is told: whether a worker runs and claims, and what waits.
For ``pegboard doctor`` and ``pegboard schedule list``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from . import _clock
from ._display import span
from ._tables import tables

if TYPE_CHECKING:
    from pegboard import Check, PluginContext, PluginStore

__all__ = ["Status", "doctor_checks", "read_status"]

# A worker renews its sign of life every 5 s at most: one unseen for this long is gone.
ALIVE_S = 30.0
# A firing this late with no worker holding it is overdue.
OVERDUE_S = 60.0
RECENT_CLAIM_S = 3600.0


@dataclass
class WorkerRow:
    id: str
    seen_at: float
    last_claim_at: float | None
    stopped_at: float | None
    claimed: int
    delivered: int
    failed: int

    def alive(self, now: float) -> bool:
        return self.stopped_at is None and now - self.seen_at <= ALIVE_S


@dataclass
class Status:
    now: float
    jobs: int = 0
    due: int = 0
    overdue: int = 0
    oldest_overdue: float | None = None
    workers: list[WorkerRow] = field(default_factory=list)

    @property
    def alive(self) -> list[WorkerRow]:
        return [w for w in self.workers if w.alive(self.now)]

    @property
    def last_claim(self) -> float | None:
        claims = [w.last_claim_at for w in self.workers if w.last_claim_at is not None]
        return max(claims) if claims else None

    def worker_line(self) -> tuple[Literal["ok", "warn"], str]:
        """(status, what to say) about the workers."""
        last = self.last_claim
        claimed = (f"the last claim was {span(self.now - last)} ago" if last is not None
                   else "no worker has ever claimed a firing from this store")
        alive = self.alive
        if alive:
            names = ", ".join(w.id for w in alive[:3]) + (f" and {len(alive) - 3} more" if len(alive) > 3 else "")
            recently = last is not None and self.now - last <= RECENT_CLAIM_S
            return "ok", (f"{len(alive)} worker{'s' if len(alive) != 1 else ''} running ({names}); {claimed}"
                          f"{'' if recently else ' (none in the last hour)'}")
        if self.overdue:
            assert self.oldest_overdue is not None
            return "warn", (f"no worker is running and {self.overdue} job{'s are' if self.overdue != 1 else ' is'} "
                            f"overdue (the oldest by {span(self.now - self.oldest_overdue)}); {claimed}. Start "
                            "`pegboard schedule worker --exec CMD`, or run a Scheduler in the host")
        return "ok", f"no worker is running; {claimed}; nothing is overdue"


def read_status(store: PluginStore, now: float | None = None) -> Status:
    from sqlalchemy import func, select

    jobs, _, workers = tables()
    status = Status(_clock.now() if now is None else now)
    t = status.now
    with store.begin(read_only=True) as conn:
        status.jobs = conn.execute(select(func.count()).select_from(jobs)).scalar_one()
        status.due = conn.execute(select(func.count()).select_from(jobs).where(jobs.c.next_fire <= t)).scalar_one()
        free = (jobs.c.next_fire <= t - OVERDUE_S, (jobs.c.lease_owner.is_(None)) | (jobs.c.lease_until <= t))
        status.overdue = conn.execute(select(func.count()).select_from(jobs).where(*free)).scalar_one()
        status.oldest_overdue = conn.execute(select(func.min(jobs.c.next_fire)).where(*free)).scalar()
        status.workers = [WorkerRow(r.id, r.seen_at, r.last_claim_at, r.stopped_at, r.claimed, r.delivered,
                                    r.failed)
                          for r in conn.execute(select(workers).order_by(workers.c.seen_at.desc()))]
    return status


def doctor_checks(context: PluginContext) -> list[Check]:
    from pegboard import Check

    store = context.store
    if not store.exists():
        return [Check("scheduler", "ok", "no jobs: the store is not created yet")]
    try:
        status = read_status(store)
    except Exception as exc:  # the store's own check says more; this line says what it means here
        return [Check("scheduler", "fail", f"cannot read the jobs: {store.describe_error(exc)}")]
    level, text = status.worker_line()
    due = f", {status.due} due now" if status.due else ""
    return [Check("jobs", "ok", f"{status.jobs} job{'s' if status.jobs != 1 else ''} in {store.url}{due}"),
            Check("worker", level, text)]


def describe_workers(status: Status) -> list[str]:
    lines = []
    for w in status.workers:
        state = "running" if w.alive(status.now) else ("stopped" if w.stopped_at else "gone")
        claim = f", last claim {span(status.now - w.last_claim_at)} ago" if w.last_claim_at else ""
        lines.append(f"{w.id}  {state}, seen {span(status.now - w.seen_at)} ago{claim}; claimed {w.claimed}, "
                     f"delivered {w.delivered}, failed {w.failed}")
    return lines


def status_json(status: Status) -> dict[str, Any]:
    return {"jobs": status.jobs, "due": status.due, "overdue": status.overdue,
            "workers": [{"id": w.id, "alive": w.alive(status.now), "seen_at": w.seen_at,
                         "last_claim_at": w.last_claim_at, "stopped_at": w.stopped_at, "claimed": w.claimed,
                         "delivered": w.delivered, "failed": w.failed} for w in status.workers]}

"""A firing: one delivery of a job's prompt, as the host or ``--exec`` gets it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ._display import local_time, span, zone_iso
from ._timing import zone

__all__ = ["Firing"]

# A firing claimed this much after its fire time is called late in its note.
LATE_AFTER_S = 300


@dataclass(frozen=True)
class Firing:
    """One firing of a scheduled job.

    ``id`` is stable: the job's id and the due time (UTC), the same on every
    worker and every attempt, so a host that sees an id twice (a worker was
    killed after handing it over) can drop the repeat. ``session_id`` is the
    session that made the job: run ``prompt`` as a turn of it.
    """

    id: str
    job_id: str
    session_id: str
    kind: str
    """``"cron"`` (CronCreate) or ``"wakeup"`` (ScheduleWakeup)."""
    prompt: str
    due_at: float
    """When it was due, Unix seconds (its jitter aside)."""
    zone: str
    root: str
    """The project root of the session that made the job."""
    cron: str | None = None
    recurring: bool = False
    reason: str | None = None
    """A wake-up's reason, as the model gave it."""
    noop: bool | None = None
    """A wake-up: the iteration that asked for it changed nothing."""
    missed: int = 0
    """Later firings of the job that came due while no worker ran: this one stands for them."""
    last: bool = False
    """The job's last firing: a one-shot job, or a recurring job at its expiry; the job is gone after it."""
    attempt: int = 1
    claimed_at: float = 0.0

    @property
    def due(self) -> datetime:
        """The due time in the job's zone."""
        return datetime.fromtimestamp(self.due_at, zone(self.zone))

    @property
    def note(self) -> str:
        """What the turn should know besides the prompt: firings missed, a
        late delivery, the job's end ("" when there is nothing to say)."""
        parts = []
        late = self.claimed_at - self.due_at
        if self.missed:
            parts.append(f"No scheduler ran for a while: {self.missed} later firing"
                         f"{'s' if self.missed != 1 else ''} of this job came due and "
                         f"{'were' if self.missed != 1 else 'was'} missed; this one, due "
                         f"{local_time(self.due_at, self.zone)}, stands for "
                         f"{'them' if self.missed != 1 else 'it'}.")
        elif late > LATE_AFTER_S:
            parts.append(f"This firing was due {local_time(self.due_at, self.zone)} and is {span(late)} late "
                         "(no scheduler ran when it was due).")
        if self.last and self.kind == "cron" and self.recurring:
            parts.append("This is the job's last firing: recurring jobs end 7 days after they are made. "
                         "Create it again with CronCreate to keep it going.")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """What ``--exec`` gets on stdin."""
        return {
            "firing_id": self.id,
            "job_id": self.job_id,
            "session_id": self.session_id,
            "kind": self.kind,
            "prompt": self.prompt,
            "due": zone_iso(self.due_at, self.zone),
            "due_at": self.due_at,
            "timezone": self.zone,
            "cron": self.cron,
            "recurring": self.recurring,
            "reason": self.reason,
            "noop": self.noop,
            "missed": self.missed,
            "last": self.last,
            "attempt": self.attempt,
            "root": self.root,
            "note": self.note,
        }

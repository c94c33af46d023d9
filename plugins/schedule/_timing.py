"""When a job fires: its cron expression in the job's zone, a recurring job's
7-day life with its last firing, the jitter that keeps many sessions from
firing at one instant, and catching up on firings missed while no worker ran.

Every job has a sequence of *plans* (due time, fire time, whether it is the
last). The due time is what the schedule names (a cron match, the wake-up
time): it makes the firing's id. The fire time is the due time moved by the
job's jitter: when a worker may claim it. Both are whole Unix seconds.

Cron expressions are evaluated by cronsim, which follows Debian's cron across
daylight-saving changes: a time skipped when clocks go forward fires once, at
the first minute after the gap (02:30 on a spring-forward day in Berlin fires
at 03:00); a time that happens twice when clocks go back fires once, the
first time (02:30 CEST, not again at 02:30 CET). Expressions with ``*`` in the
hour field fire in both repeated hours, as cron does.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

__all__ = ["MAX_AGE_S", "MAX_DELAY_S", "MIN_DELAY_S", "JobTiming", "Plan", "catch_up", "check_cron",
           "check_zone", "clamp_delay", "first_plan", "jitter_fraction", "local_zone_name", "plans_after",
           "zone"]

MAX_AGE_S = 7 * 86400            # a recurring job's life; it fires one last time when it ends
MIN_DELAY_S, MAX_DELAY_S = 60, 3600   # ScheduleWakeup's delaySeconds is clamped to this
RECURRING_JITTER_SHARE = 0.1     # a recurring firing is late by up to this share of its period ...
RECURRING_JITTER_MAX_S = 900     # ... and never by more than 15 minutes
ONE_SHOT_EARLY_MAX_S = 90        # a one-shot job due on :00 or :30 fires up to this early
ROUND_MINUTES = (0, 30)


@dataclass(frozen=True)
class JobTiming:
    """What decides a job's firing times (a row of ``schedule_jobs``)."""

    id: str
    kind: str                     # "cron" or "wakeup"
    cron: str | None
    zone: str
    recurring: bool
    created_at: float
    expires_at: float | None      # recurring jobs: created_at + 7 days


@dataclass(frozen=True)
class Plan:
    due: float
    fire: float
    last: bool


# --- zones --------------------------------------------------------------------


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def check_zone(name: str) -> str:
    """``name`` if it is an IANA time zone this machine knows, else ``ValueError``."""
    from zoneinfo import ZoneInfoNotFoundError

    try:
        zone(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"{name!r} is not a time zone this machine knows (an IANA name such as "
                         "'Europe/Berlin', 'America/New_York' or 'UTC')") from None
    return name


def local_zone_name() -> str:
    """The machine's zone as an IANA name (``TZ``, else ``/etc/localtime``,
    else ``/etc/timezone``), so that a job keeps its daylight-saving rules
    wherever its worker runs; ``UTC`` when none can be told."""
    candidates: list[str] = []
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        candidates.append(tz)
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    try:
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        pass
    for name in candidates:
        try:
            return check_zone(name)
        except ValueError:
            continue
    return "UTC"


# --- cron -----------------------------------------------------------------------


def check_cron(expression: str) -> str:
    """The expression with its fields separated by single spaces, or
    ``ValueError`` saying what is wrong (five fields: minute hour
    day-of-month month day-of-week)."""
    from cronsim import CronSim, CronSimError

    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(f"{expression!r} has {len(fields)} field{'s' if len(fields) != 1 else ''}; a cron "
                         "expression here has exactly 5: minute hour day-of-month month day-of-week "
                         "(e.g. '*/15 * * * *', '0 9 * * 1-5')")
    normal = " ".join(fields)
    try:
        CronSim(normal, datetime(2000, 1, 1))
    except CronSimError as exc:
        raise ValueError(f"{expression!r} is not a valid cron expression: {exc}") from None
    return normal


def describe_cron(expression: str) -> str:
    """cronsim's plain-English reading ("At 09:00 on Monday through Friday")."""
    from cronsim import CronSim

    try:
        return str(CronSim(expression, datetime(2000, 1, 1)).explain())
    except Exception:  # explain() is a courtesy: the expression itself is valid
        return expression


def _matches(job: JobTiming, after: float) -> Iterator[float]:
    """The cron's matches strictly after ``after``, as Unix seconds."""
    from cronsim import CronSim

    assert job.cron is not None
    start = datetime.fromtimestamp(math.floor(after), zone(job.zone))
    for moment in CronSim(job.cron, start):
        yield moment.timestamp()


# --- jitter ---------------------------------------------------------------------


def jitter_fraction(job_id: str) -> float:
    """A number in [0, 1) fixed by the job's id: the same on every worker and
    after every restart."""
    digest = hashlib.sha256(job_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def recurring_delay(job_id: str, due: float, following: float) -> float:
    """How late a recurring firing goes: the job's share of 10% of the time
    to the next match, at most 15 minutes."""
    return math.floor(jitter_fraction(job_id) * min(RECURRING_JITTER_SHARE * (following - due),
                                                    RECURRING_JITTER_MAX_S))


def one_shot_lead(job: JobTiming, due: float) -> float:
    """How early a one-shot cron firing goes: up to 90 s when it is due on
    :00 or :30 (where everyone's reminders land), else not at all."""
    minute = datetime.fromtimestamp(due, zone(job.zone)).minute
    if minute not in ROUND_MINUTES:
        return 0.0
    return math.floor(jitter_fraction(job.id) * ONE_SHOT_EARLY_MAX_S)


# --- plans ----------------------------------------------------------------------


def first_plan(job: JobTiming) -> Plan | None:
    """The job's first firing after it was made (None: the cron never matches)."""
    return next(plans_after(job, job.created_at), None)


def plans_after(job: JobTiming, due: float) -> Iterator[Plan]:
    """The job's firings due after ``due``, in order, the last one last.

    A recurring job fires at its matches until it expires, then once more at
    its expiry (``last``). A one-shot cron job fires at its first match after
    it was made. A wake-up has one firing, made by ScheduleWakeup itself.
    """
    if job.kind != "cron":
        return
    if not job.recurring:
        if due > job.created_at:
            return
        for match in _matches(job, job.created_at):
            yield Plan(match, max(job.created_at, match - one_shot_lead(job, match)), True)
            return
        return
    expires = job.expires_at if job.expires_at is not None else job.created_at + MAX_AGE_S
    if due >= expires:
        return
    matches = _matches(job, due)
    current = next(matches, None)
    while current is not None and current < expires:
        following = next(matches, None)
        period_end = following if following is not None else current + RECURRING_JITTER_MAX_S * 10
        yield Plan(current, current + recurring_delay(job.id, current, period_end), False)
        current = following
    yield Plan(expires, expires, True)


def catch_up(job: JobTiming, due: float, now: float) -> tuple[int, Plan | None]:
    """After the firing due at ``due``: how many later firings have come due
    by ``now`` too (missed: they fire as this one), and the next firing still
    ahead (None when the missed ones include the job's last)."""
    missed = 0
    for plan in plans_after(job, due):
        if plan.fire > now:
            return missed, plan
        missed += 1
        if plan.last:
            return missed, None
    return missed, None


def clamp_delay(seconds: float) -> int:
    """ScheduleWakeup's delay, in whole seconds within 60 to 3,600."""
    return int(min(MAX_DELAY_S, max(MIN_DELAY_S, math.ceil(seconds))))

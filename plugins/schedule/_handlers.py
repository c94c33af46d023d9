"""ScheduleWakeup, CronCreate, CronList and CronDelete.

Every job is a row in the store: it outlives this process, and any worker
that shares the store fires it. Times are shown in ``[plugins.schedule]
timezone``, else the machine's zone.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from pegboard import TextContent, ToolContext, ToolResult

from . import _clock
from ._config import ScheduleConfig
from ._display import firing_id, local_time, span, zone_iso
from ._jobs import MAX_JOBS, Job, JobLimit, create_cron, delete_job, list_jobs, set_wakeup, stop_wakeups
from ._models import CronCreateInput, CronDeleteInput, CronListInput, ScheduleWakeupInput
from ._timing import MAX_DELAY_S, MIN_DELAY_S, check_cron, clamp_delay, describe_cron

__all__ = ["cron_create", "cron_delete", "cron_list", "schedule_wakeup"]

T = TypeVar("T")
WAKEUP_FIELDS = ("delaySeconds", "reason", "prompt", "noop")


class _StoreDown(Exception):
    pass


def _config(ctx: ToolContext) -> ScheduleConfig:
    return ctx.config if isinstance(ctx.config, ScheduleConfig) else ScheduleConfig()


async def _run(ctx: ToolContext, fn: Callable[..., T], *args: Any, read_only: bool = False) -> T:
    try:
        return await ctx.store.run(fn, *args, read_only=read_only)
    except (JobLimit, ValueError):
        raise
    except Exception as exc:  # the store is down or refuses: the model should hear it plainly
        raise _StoreDown(ctx.store.describe_error(exc)) from None


def _unreachable(what: str, exc: _StoreDown) -> ToolResult:
    return ToolResult.error(f"The schedule store could not be reached, so {what}: {exc}")


def _result(text: str, data: dict[str, Any]) -> ToolResult:
    return ToolResult(content=[TextContent(text=text)], structured_content=data)


# --- ScheduleWakeup ------------------------------------------------------------


async def schedule_wakeup(args: ScheduleWakeupInput, ctx: ToolContext) -> ToolResult:
    zone = _config(ctx).zone_name()
    session = ctx.session.id
    if args.stop:
        try:
            gone = await _run(ctx, stop_wakeups, session)
        except _StoreDown as exc:
            return _unreachable("the loop was not stopped", exc)
        ctx.emit("schedule.wakeup", {"stopped": True})
        if not gone:
            return _result("The loop is stopped; no wake-up was pending.", {"stopped": True, "cancelled": None})
        return _result(f"The loop is stopped: the wake-up set for {local_time(gone[0].next_due, zone)} is "
                       "cancelled.", {"stopped": True, "cancelled": gone[0].id})
    missing = [name for name in WAKEUP_FIELDS if getattr(args, name) is None]
    if missing:
        return ToolResult.error(
            f"ScheduleWakeup needs {', '.join(missing)}: delaySeconds, reason, prompt and noop are required "
            "unless stop is true. Nothing was scheduled.")
    assert args.delaySeconds is not None and args.prompt is not None and args.reason is not None
    prompt, reason = args.prompt, args.reason
    if not prompt.strip():
        return ToolResult.error("ScheduleWakeup's prompt is empty: give the loop's input to run again. "
                                "Nothing was scheduled.")
    delay = clamp_delay(args.delaySeconds)
    now = _clock.now()
    due = float(math.ceil(now + delay))
    try:
        job, replaced = await _run(ctx, lambda conn: set_wakeup(
            conn, session_id=session, prompt=prompt, reason=reason, noop=bool(args.noop), due=due,
            zone=zone, root=str(ctx.root), now=now))
    except _StoreDown as exc:
        return _unreachable("no wake-up was set", exc)
    lines = [f"Next wake-up: {local_time(job.next_due, zone)} ({zone}), in {span(delay)}."]
    if delay != args.delaySeconds:
        edge = "minimum" if delay == MIN_DELAY_S else "maximum"
        lines.append(f"delaySeconds {args.delaySeconds:g} was clamped to {delay}, the {edge} "
                     f"({MIN_DELAY_S}-{MAX_DELAY_S}).")
    if replaced:
        lines.append(f"It replaces the wake-up that was set for {local_time(replaced[0].next_due, zone)}.")
    data = {"id": job.id, "firing_id": firing_id(job.id, job.next_due), "at": zone_iso(job.next_due, zone),
            "timezone": zone, "delaySeconds": delay, "reason": args.reason, "noop": bool(args.noop),
            "replaced": replaced[0].id if replaced else None}
    ctx.emit("schedule.wakeup", data)
    return _result(" ".join(lines), data)


# --- CronCreate ------------------------------------------------------------------


async def cron_create(args: CronCreateInput, ctx: ToolContext) -> ToolResult:
    zone = _config(ctx).zone_name()
    try:
        cron = check_cron(args.cron)
    except ValueError as exc:
        return ToolResult.error(f"cron: {exc}. Nothing was scheduled.")
    now = _clock.now()
    try:
        job = await _run(ctx, lambda conn: create_cron(
            conn, session_id=ctx.session.id, cron=cron, prompt=args.prompt, recurring=args.recurring,
            zone=zone, root=str(ctx.root), now=now))
    except JobLimit:
        return ToolResult.error(f"This session already has {MAX_JOBS} scheduled jobs, the most it may have. "
                                "Delete one with CronDelete (CronList shows them) before creating another.")
    except ValueError as exc:
        return ToolResult.error(f"cron: {exc}. Nothing was scheduled.")
    except _StoreDown as exc:
        return _unreachable("nothing was scheduled", exc)
    kind = "recurring job" if job.recurring else "one-shot job"
    lines = [f"Scheduled {kind} {job.id}: {describe_cron(cron)} ({cron}, {zone}).",
             f"Next firing: {_when(job, zone, now)}."]
    if job.recurring:
        assert job.expires_at is not None
        lines.append(f"It expires {local_time(job.expires_at, zone)}, 7 days from now, with one last firing.")
    else:
        lines.append("It fires once, then it is deleted.")
    if args.durable is False:
        lines.append("durable=false is not needed here: every job is kept in the store and survives restarts.")
    data = _job_data(job, zone)
    ctx.emit("schedule.created", data)
    return _result("\n".join(lines), data)


def _when(job: Job, zone: str, now: float) -> str:
    """The next firing, with its jitter when it moves it."""
    text = f"{local_time(job.next_fire, zone)} (in {span(max(job.next_fire - now, 0))}"
    shift = job.next_fire - job.next_due
    if shift:
        sign = "+" if shift > 0 else "-"
        text += f"; due {local_time(job.next_due, zone)}, {sign}{span(shift)} of this job's jitter"
    return text + ")"


def _job_data(job: Job, zone: str) -> dict[str, Any]:
    return {"id": job.id, "kind": job.kind, "cron": job.cron, "recurring": job.recurring, "prompt": job.prompt,
            "timezone": zone, "next_due": zone_iso(job.next_due, zone), "next_fire": zone_iso(job.next_fire, zone),
            "expires": zone_iso(job.expires_at, zone) if job.expires_at else None, "fired": job.fired}


# --- CronList ------------------------------------------------------------------------


async def cron_list(args: CronListInput, ctx: ToolContext) -> ToolResult:
    zone = _config(ctx).zone_name()
    try:
        jobs = await _run(ctx, list_jobs, ctx.session.id, read_only=True)
    except _StoreDown as exc:
        return _unreachable("the jobs cannot be listed", exc)
    if not jobs:
        return _result("No scheduled jobs in this session.", {"jobs": []})
    now = _clock.now()
    crons = sum(1 for j in jobs if j.kind == "cron")
    lines = [f"{crons} cron job{'s' if crons != 1 else ''} of at most {MAX_JOBS}"
             f"{' and a wake-up' if crons != len(jobs) else ''}; times in {zone}:"]
    for job in jobs:
        lines.append(f"- {job.id}  {_describe(job, zone, now)}")
    return _result("\n".join(lines), {"jobs": [_job_data(j, zone) for j in jobs]})


def _describe(job: Job, zone: str, now: float) -> str:
    if job.kind == "wakeup":
        head = f"wake-up {local_time(job.next_due, zone)} (in {span(max(job.next_due - now, 0))})"
        if job.reason:
            head += f", {_clip(job.reason, 80)!r}"
    else:
        kind = "recurring" if job.recurring else "one-shot"
        head = f"{job.cron}  {kind}, next {local_time(job.next_fire, zone)} (in {span(max(job.next_fire - now, 0))})"
        if job.expires_at is not None:
            head += f", expires {local_time(job.expires_at, zone)}"
        if job.fired:
            head += f", fired {job.fired} time{'s' if job.fired != 1 else ''}"
    if job.in_flight(now):
        head += ", being delivered now"
    elif job.attempts:
        head += f", delivery failed {job.attempts} time{'s' if job.attempts != 1 else ''} (tried again)"
    return f"{head}: {_clip(job.prompt, 120)!r}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- CronDelete ------------------------------------------------------------------------


async def cron_delete(args: CronDeleteInput, ctx: ToolContext) -> ToolResult:
    zone = _config(ctx).zone_name()
    try:
        job = await _run(ctx, delete_job, args.id.strip(), ctx.session.id)
    except _StoreDown as exc:
        return _unreachable("nothing was deleted", exc)
    if job is None:
        return ToolResult.error(f"No job {args.id!r} in this session; CronList shows its jobs.")
    what = job.cron if job.kind == "cron" else f"the wake-up set for {local_time(job.next_due, zone)}"
    text = f"Deleted job {job.id} ({what}): it will not fire again."
    if job.in_flight(_clock.now()):
        text += (f" Its firing due {local_time(job.next_due, zone)} was being delivered as it was deleted: that "
                 "delivery runs to its end, and nothing fires after it.")
    ctx.emit("schedule.deleted", {"id": job.id})
    return _result(text, {"deleted": job.id, "was_being_delivered": job.in_flight(_clock.now())})

"""``pegboard schedule worker|list|delete``: for operators."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from pegboard.cli import JSON, current_state, global_options

if TYPE_CHECKING:
    from ._worker import Delivered

__all__ = ["schedule_group"]


@click.group("schedule")
def schedule_group() -> None:
    """Scheduled prompts (ScheduleWakeup, CronCreate): the worker that fires them, and the jobs."""


def _context() -> tuple[Any, str]:
    """The schedule plugin's context, and the zone times are shown in."""
    from ._config import ScheduleConfig
    from ._worker import SchedulerError, schedule_context

    toolbox = current_state().toolbox()
    try:
        context = schedule_context(toolbox)
    except SchedulerError as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(2)
    config = toolbox.plugin_config(context.name)
    return context, (config if isinstance(config, ScheduleConfig) else ScheduleConfig()).zone_name()


@schedule_group.command("worker")
@global_options
@click.option("--exec", "command", metavar="CMD",
              help="Deliver each firing by running CMD (split like a shell would, run without one) with the "
                   "firing as JSON on its standard input; exit 0 means delivered. Without it, firings go to "
                   "the pegboard_schedule_deliver hook.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds CMD may run before it is stopped and the delivery counts as failed.")
@click.option("--lease", type=click.FloatRange(min=1), default=30.0, show_default=True,
              help="Seconds a claim holds unrenewed: a killed worker's firing is delivered again after this.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks for due firings while idle.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="Deliveries under way at once.")
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit.")
def worker(command: str | None, timeout: float, lease: float, poll: float, concurrency: int, once: bool) -> None:
    """Fire due jobs: claim each firing under a lease, deliver it, record it.

    Run as many workers as you like, on as many machines, against one store:
    each firing is delivered once. SIGTERM or Ctrl-C stops claiming and
    finishes the deliveries under way (a second one stops at once).

    Exit status: 0 stopped (with --once: what was due was delivered); 1 the store failed; 2 the
    worker could not be set up (the reason on stderr), or a usage or configuration error; 130
    stopped by a second signal, deliveries under way abandoned."""
    import asyncio
    import contextlib
    import signal

    from ._delivery import ExecDelivery
    from ._worker import Scheduler, SchedulerError

    toolbox = current_state().toolbox()
    try:
        deliver = ExecDelivery(command, timeout) if command is not None else None
        scheduler = Scheduler(toolbox, deliver=deliver, lease_s=lease, poll_s=poll, concurrency=concurrency,
                              on_done=_print_outcome)
    except (SchedulerError, ValueError) as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(2)
    target = f"`{command}`" if command is not None else "the pegboard_schedule_deliver hook"
    click.echo(f"schedule worker {scheduler.worker_id}: {scheduler.store.url}, delivering to {target} "
               f"(lease {lease:g} s)", err=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        signals = 0

        def on_signal() -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                # Stop first: the note below goes to a stderr whose reader may
                # be gone (a killed supervisor), and a failed write must not
                # leave the worker claiming.
                scheduler.stop()
                with contextlib.suppress(OSError):
                    click.echo("schedule worker: stopping after the deliveries under way (again to stop now)",
                               err=True)
            elif task is not None:
                task.cancel()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        await scheduler.run(until_idle=once)

    from pegboard import StoreError

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        sys.exit(130)
    except StoreError as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # --once on a database that cannot be reached
        click.echo(f"pegboard: {scheduler.store.describe_error(exc)}", err=True)
        sys.exit(1)


def _print_outcome(outcome: Delivered) -> None:
    firing = outcome.firing
    extra = f" ({outcome.detail})" if outcome.detail else ""
    missed = f", standing for {firing.missed} missed" if firing.missed else ""
    click.echo(f"{outcome.status} {firing.id} session {firing.session_id} attempt {firing.attempt}{missed}{extra}")


@schedule_group.command("list")
@global_options
@JSON
def schedule_list(as_json: bool) -> None:
    """Every job in the store, by its next firing, and the workers.

    Exit status: 0 the jobs listed; 1 the store failed (the reason on stderr, the URL's password
    hidden); 2 a usage or configuration error."""
    from ._display import local_time, span
    from ._jobs import list_jobs
    from ._status import describe_workers, read_status, status_json

    context, zone = _context()
    store = context.store
    if not store.exists():
        click.echo(json.dumps({"jobs": [], "status": None}) if as_json else "No jobs (the store is not created yet).")
        return
    try:
        with store.begin(read_only=True) as conn:
            jobs = list_jobs(conn)
        status = read_status(store)
    except Exception as exc:
        click.echo(f"pegboard: {store.describe_error(exc)}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"jobs": [j.to_json() for j in jobs], "status": status_json(status)}, indent=2))
        return
    if not jobs:
        click.echo("No jobs.")
    now = status.now
    for job in jobs:
        what = job.cron if job.kind == "cron" else "wake-up"
        kind = "recurring" if job.recurring else "one-shot"
        state = "being delivered" if job.in_flight(now) else (
            f"failed {job.attempts}x, retrying" if job.attempts else ("due" if job.next_fire <= now else "waiting"))
        click.echo(f"{job.id}  session {job.session_id}  {what} ({kind})  next {local_time(job.next_fire, zone)} "
                   f"(in {span(max(job.next_fire - now, 0))})  {state}  fired {job.fired}")
        click.echo(f"    {' '.join(job.prompt.split())[:100]}")
    level, text = status.worker_line()
    click.echo(f"workers: {text}")
    for line in describe_workers(status):
        click.echo(f"    {line}")


@schedule_group.command("delete")
@global_options
@click.argument("ids", nargs=-1, required=True)
def schedule_delete(ids: tuple[str, ...]) -> None:
    """Delete jobs by id (any session's): they never fire again.

    Exit status: 0 every job named was deleted; 1 one was not found, or the store failed; 2 a usage
    or configuration error."""
    from ._jobs import delete_job

    context, _zone = _context()
    store = context.store
    missing = 0
    try:
        for job_id in ids:
            with store.begin() as conn:
                job = delete_job(conn, job_id)
            if job is None:
                click.echo(f"no job {job_id}", err=True)
                missing += 1
                continue
            note = " (its firing under way runs to its end)" if job.in_flight(_now()) else ""
            click.echo(f"deleted {job.id} of session {job.session_id}: it will not fire again{note}")
    except Exception as exc:
        click.echo(f"pegboard: {store.describe_error(exc)}", err=True)
        sys.exit(1)
    sys.exit(1 if missing else 0)


def _now() -> float:
    from . import _clock

    return _clock.now()

"""The scheduler in process, on SQLite and PostgreSQL, with an injected clock:
claims, deliveries through the host hook, records, retries, leases that run
out, deletion while a firing is claimed, missed firings and expiry."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from _schedule import clock  # noqa: F401

from pegboard import Toolbox, hookimpl
from pegboard.plugins.schedule import FakeClock, Firing, Scheduler, SchedulerError

pytestmark = pytest.mark.anyio

UTC = ZoneInfo("UTC")
START = datetime(2026, 12, 7, 8, 0, 0, tzinfo=UTC).timestamp()


class Host:
    """An embedding host: it runs each firing's prompt as a turn (here: notes it)."""

    def __init__(self) -> None:
        self.firings: list[Firing] = []
        self.fail = 0
        self.during: Any = None

    @hookimpl
    async def pegboard_schedule_deliver(self, firing: Firing) -> bool:
        await asyncio.sleep(0)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("the model API is down")
        if self.during is not None:
            await self.during(firing)
        self.firings.append(firing)
        return True


@pytest.fixture
def host() -> Host:
    return Host()


@pytest.fixture
def toolbox(tmp_path: Path, store_url: str, host: Host, user_config: Any) -> Toolbox:
    user_config('[plugins.schedule]\ntimezone = "UTC"\n')
    return Toolbox.load(cwd=tmp_path, plugins=["schedule"], host=host)


@pytest.fixture
def sqlite_toolbox(tmp_path: Path, host: Host, user_config: Any) -> Toolbox:
    user_config('[plugins.schedule]\ntimezone = "UTC"\n')
    return Toolbox.load(cwd=tmp_path, plugins=["schedule"], host=host)


async def wakeup(session: Any, delay: float = 60, prompt: str = "check the build") -> str:
    result = await session.call("ScheduleWakeup", {"delaySeconds": delay, "reason": "waiting", "prompt": prompt,
                                                   "noop": False})
    assert not result.is_error, result.text_content()
    return str(result.structured_content["id"])


async def cron(session: Any, expression: str, prompt: str = "p", recurring: bool = True) -> dict[str, Any]:
    result = await session.call("CronCreate", {"cron": expression, "prompt": prompt, "recurring": recurring})
    assert not result.is_error, result.text_content()
    return dict(result.structured_content)


def firing_log(toolbox: Toolbox) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from pegboard.plugins.schedule._tables import tables

    _, firings, _ = tables()
    with toolbox.context_for("schedule").store.begin(read_only=True) as conn:  # type: ignore[union-attr]
        return [dict(r._mapping) for r in conn.execute(select(firings).order_by(firings.c.done_at, firings.c.id))]


def claim_as(toolbox: Toolbox, worker: str, now: float, lease_s: float = 30.0) -> list[Any]:
    """What a worker that is killed right after claiming leaves behind."""
    from pegboard.plugins.schedule._claims import claim

    with toolbox.context_for("schedule").store.begin() as conn:  # type: ignore[union-attr]
        return claim(conn, worker, now, lease_s, 10)


# --- delivery ------------------------------------------------------------------------


async def test_a_due_wakeup_is_delivered_once_to_the_host(toolbox: Toolbox, host: Host, clock: FakeClock) -> None:
    session = toolbox.session("default", session_id="conv-1")
    job_id = await wakeup(session, 120)
    scheduler = Scheduler(toolbox)
    assert await scheduler.run_once() == []          # not due yet
    clock.advance(119)
    assert await scheduler.run_once() == []
    clock.advance(1)
    done = await scheduler.run_once()
    assert [d.status for d in done] == ["delivered"]
    firing = host.firings[0]
    assert firing.id == f"{job_id}@2026-12-07T08:02:00Z"
    assert (firing.session_id, firing.kind, firing.prompt, firing.reason, firing.last) == \
        ("conv-1", "wakeup", "check the build", "waiting", True)
    assert firing.root == str(toolbox.settings.root) and firing.note == ""
    assert await scheduler.run_once() == []          # delivered once, and the wake-up is gone
    assert (await session.call("CronList", {})).structured_content["jobs"] == []
    assert [(r["id"], r["status"], r["session_id"]) for r in firing_log(toolbox)] == \
        [(firing.id, "delivered", "conv-1")]


async def test_a_recurring_job_fires_at_each_match_and_moves_on(toolbox: Toolbox, host: Host,
                                                                clock: FakeClock) -> None:
    session = toolbox.session("default")
    job = await cron(session, "*/10 * * * *")
    scheduler = Scheduler(toolbox)
    fire = datetime.fromisoformat(job["next_fire"]).timestamp()
    for n in range(3):
        clock.set(fire)
        done = await scheduler.run_once()
        assert [d.status for d in done] == ["delivered"], n
        listed = (await session.call("CronList", {})).structured_content["jobs"][0]
        assert listed["fired"] == n + 1
        fire = datetime.fromisoformat(listed["next_fire"]).timestamp()
    assert [f.id for f in host.firings] == [f"{job['id']}@2026-12-07T08:{m}0:00Z" for m in (1, 2, 3)]
    assert all(not f.last and f.missed == 0 for f in host.firings)


async def test_firings_missed_while_no_worker_ran_fire_once_saying_how_many(sqlite_toolbox: Toolbox, host: Host,
                                                                            clock: FakeClock) -> None:
    session = sqlite_toolbox.session("default")
    job = await cron(session, "*/10 * * * *")
    clock.advance(2 * 3600 + 60)                    # 10:01: 08:10 ... 10:00 came due
    done = await Scheduler(sqlite_toolbox).run_once()
    assert len(done) == 1
    firing = host.firings[0]
    assert firing.id == f"{job['id']}@2026-12-07T08:10:00Z" and firing.missed == 11
    assert "11 later firings of this job came due and were missed" in firing.note
    listed = (await session.call("CronList", {})).structured_content["jobs"][0]
    assert listed["next_due"] == "2026-12-07T10:10:00+00:00"


async def test_a_recurring_job_fires_one_last_time_at_expiry_and_is_gone(sqlite_toolbox: Toolbox, host: Host,
                                                                         clock: FakeClock) -> None:
    session = sqlite_toolbox.session("default")
    job = await cron(session, "0 9 * * *")
    scheduler = Scheduler(sqlite_toolbox)
    for _day in range(7):
        clock.set(datetime.fromisoformat(
            (await session.call("CronList", {})).structured_content["jobs"][0]["next_fire"]).timestamp())
        await scheduler.run_once()
    assert len(host.firings) == 7 and not any(f.last for f in host.firings)
    clock.set(START + 7 * 86400)
    done = await scheduler.run_once()
    assert [d.status for d in done] == ["delivered"]
    last = host.firings[-1]
    assert last.last and last.id == f"{job['id']}@2026-12-14T08:00:00Z"
    assert "This is the job's last firing" in last.note
    assert (await session.call("CronList", {})).structured_content["jobs"] == []


async def test_a_one_shot_cron_job_fires_once_and_is_deleted(sqlite_toolbox: Toolbox, host: Host,
                                                             clock: FakeClock) -> None:
    session = sqlite_toolbox.session("default")
    job = await cron(session, "45 8 7 12 *", recurring=False)
    clock.set(START + 3 * 3600)
    done = await Scheduler(sqlite_toolbox).run_once()
    assert [d.firing.id for d in done] == [f"{job['id']}@2026-12-07T08:45:00Z"]
    assert "2 h 15 min late" in host.firings[0].note
    assert (await session.call("CronList", {})).structured_content["jobs"] == []


# --- failures, leases, deletion ----------------------------------------------------------


async def test_a_failed_delivery_is_tried_again_later_then_recorded_as_failed(toolbox: Toolbox, host: Host,
                                                                              clock: FakeClock,
                                                                              capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    session = toolbox.session("default")
    await wakeup(session, 60)
    clock.advance(60)
    scheduler = Scheduler(toolbox, max_attempts=3)
    host.fail = 1
    assert [d.status for d in await scheduler.run_once()] == ["retry"]
    assert "the model API is down" in capsys.readouterr().err
    assert await scheduler.run_once() == []        # not before its retry time
    clock.advance(30)
    done = await scheduler.run_once()
    assert [(d.status, d.firing.attempt) for d in done] == [("delivered", 2)]
    assert firing_log(toolbox)[0]["attempts"] == 2

    await wakeup(session, 60, prompt="second")
    clock.advance(60)
    host.fail = 3
    statuses = []
    for wait in (0, 30, 60):
        clock.advance(wait)
        statuses += [d.status for d in await scheduler.run_once()]
    assert statuses == ["retry", "retry", "failed"]
    assert [r["status"] for r in firing_log(toolbox)] == ["delivered", "failed"]
    assert (await session.call("CronList", {})).structured_content["jobs"] == []


async def test_a_killed_workers_firing_comes_back_with_the_same_id(toolbox: Toolbox, host: Host,
                                                                   clock: FakeClock) -> None:
    session = toolbox.session("default")
    await wakeup(session, 60)
    clock.advance(60)
    held = claim_as(toolbox, "dead-worker", clock(), lease_s=30)   # claimed, then the worker died
    assert len(held) == 1
    survivor = Scheduler(toolbox, lease_s=30)
    assert await survivor.run_once() == []         # the lease still holds
    clock.advance(29)
    assert await survivor.run_once() == []
    clock.advance(2)
    done = await survivor.run_once()
    assert [d.firing.id for d in done] == [held[0].firing.id]
    assert done[0].firing.attempt == 2 and host.firings[0].id == held[0].firing.id


async def test_deleting_a_claimed_job_stops_it_even_before_its_delivery(toolbox: Toolbox, host: Host,
                                                                        clock: FakeClock) -> None:
    session = toolbox.session("default")
    job = await cron(session, "*/5 * * * *")
    clock.set(datetime.fromisoformat(job["next_fire"]).timestamp())
    claim_as(toolbox, "dead-worker", clock())
    deleted = await session.call("CronDelete", {"id": job["id"]})
    assert "was being delivered as it was deleted: that delivery runs to its end" in deleted.text_content()
    assert deleted.structured_content["was_being_delivered"] is True
    clock.advance(3600)
    assert await Scheduler(toolbox).run_once() == []
    assert host.firings == []


async def test_a_job_deleted_during_its_delivery_is_recorded_and_never_fires_again(toolbox: Toolbox, host: Host,
                                                                                   clock: FakeClock) -> None:
    session = toolbox.session("default")
    job = await cron(session, "*/5 * * * *")

    async def the_turn_deletes_its_job(firing: Firing) -> None:
        result = await session.call("CronDelete", {"id": firing.job_id})
        assert "was being delivered" in result.text_content()

    host.during = the_turn_deletes_its_job
    clock.set(datetime.fromisoformat(job["next_fire"]).timestamp())
    scheduler = Scheduler(toolbox)
    done = await scheduler.run_once()
    assert [d.status for d in done] == ["lost"]
    assert [r["status"] for r in firing_log(toolbox)] == ["delivered"]
    clock.advance(86400)
    assert await scheduler.run_once() == []


async def test_a_wakeup_set_by_the_turn_it_started_is_kept(sqlite_toolbox: Toolbox, host: Host,
                                                          clock: FakeClock) -> None:
    session = sqlite_toolbox.session("default")
    await wakeup(session, 60)

    async def the_turn_sets_the_next(firing: Firing) -> None:
        if len(host.firings) == 0:
            await wakeup(session, 300, prompt="next iteration")

    host.during = the_turn_sets_the_next
    scheduler = Scheduler(sqlite_toolbox)
    clock.advance(60)
    await scheduler.run_once()
    clock.advance(300)
    await scheduler.run_once()
    assert [f.prompt for f in host.firings] == ["check the build", "next iteration"]


# --- the loop, and what it needs ------------------------------------------------------------


async def test_run_delivers_as_time_passes_until_stopped(sqlite_toolbox: Toolbox, host: Host,
                                                         clock: FakeClock) -> None:
    from pegboard.plugins.schedule._status import read_status

    session = sqlite_toolbox.session("default")
    await wakeup(session, 60)
    clock.advance(61)
    scheduler = Scheduler(sqlite_toolbox, poll_s=0.02)
    running = asyncio.create_task(scheduler.run())
    for _ in range(200):
        if host.firings:
            break
        await asyncio.sleep(0.02)
    assert len(host.firings) == 1
    status = read_status(sqlite_toolbox.context_for("schedule").store)  # type: ignore[union-attr]
    assert [w.id for w in status.alive] == [scheduler.worker_id]
    scheduler.stop()
    await asyncio.wait_for(running, 5)
    status = read_status(sqlite_toolbox.context_for("schedule").store)  # type: ignore[union-attr]
    assert status.alive == [] and status.workers[0].delivered == 1 and status.workers[0].claimed == 1
    assert status.last_claim == START + 61


def test_a_scheduler_needs_something_to_deliver_to(tmp_path: Path, user_config: Any) -> None:
    with pytest.raises(SchedulerError, match="nothing delivers firings here"):
        Scheduler(Toolbox.load(cwd=tmp_path, plugins=["schedule"]))
    user_config("[plugins.schedule]\nenabled = false\n")
    with pytest.raises(SchedulerError, match="disabled"):
        Scheduler(Toolbox.load(cwd=tmp_path, plugins=["schedule"]), deliver=lambda f: None)  # type: ignore[arg-type,return-value]


# --- --exec -----------------------------------------------------------------------------------


async def test_exec_gets_the_firing_as_json_and_its_exit_status_decides(sqlite_toolbox: Toolbox, clock: FakeClock,
                                                                        tmp_path: Path) -> None:
    from pegboard.plugins.schedule._delivery import ExecDelivery

    out = tmp_path / "got.jsonl"
    script = tmp_path / "deliver.py"
    script.write_text("import json, os, sys\n"
                      "line = sys.stdin.read()\n"
                      f"open({str(out)!r}, 'a').write(line)\n"
                      "data = json.loads(line)\n"
                      "assert os.environ['PEGBOARD_FIRING_ID'] == data['firing_id']\n"
                      "sys.exit(3 if data['prompt'] == 'fail' else 0)\n")
    session = sqlite_toolbox.session("default", session_id="ops-1")
    await wakeup(session, 60, prompt="hello")
    clock.advance(60)
    scheduler = Scheduler(sqlite_toolbox, deliver=ExecDelivery(f"{sys.executable} {script}", timeout_s=30))
    assert [d.status for d in await scheduler.run_once()] == ["delivered"]
    data = json.loads(out.read_text())
    assert {k: data[k] for k in ("session_id", "kind", "prompt", "due", "missed", "last")} == \
        {"session_id": "ops-1", "kind": "wakeup", "prompt": "hello", "due": "2026-12-07T08:01:00+00:00",
         "missed": 0, "last": True}
    assert data["firing_id"] == f"{data['job_id']}@2026-12-07T08:01:00Z"
    await wakeup(session, 60, prompt="fail")
    clock.advance(60)
    done = await scheduler.run_once()
    assert [(d.status, d.detail) for d in done] == [("retry", f"{sys.executable} exited 3")]


@pytest.mark.slow
async def test_exec_that_runs_too_long_is_stopped_and_counts_as_failed(sqlite_toolbox: Toolbox,
                                                                       clock: FakeClock) -> None:
    from pegboard.plugins.schedule._delivery import ExecDelivery

    session = sqlite_toolbox.session("default")
    await wakeup(session, 60)
    clock.advance(60)
    slow = ExecDelivery(f"{sys.executable} -c 'import time; time.sleep(60)'", timeout_s=0.5)
    done = await Scheduler(sqlite_toolbox, deliver=slow).run_once()
    assert done[0].status == "retry" and "ran longer than 0.5 s" in (done[0].detail or "")


def test_the_workers_own_statements_name_the_jobs_columns_in_order() -> None:
    from dataclasses import fields

    from pegboard.plugins.schedule._claims import _JOB_COLUMNS
    from pegboard.plugins.schedule._jobs import Job
    from pegboard.plugins.schedule._tables import tables

    named = [c.strip() for c in _JOB_COLUMNS.split(",")]
    assert named == [f.name for f in fields(Job)] == [c.name for c in tables()[0].c]


async def test_a_worker_keeps_trying_while_the_database_is_down(tmp_path: Path, user_config: Any, host: Host,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as probe:   # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    user_config(f'[store]\nurl = "postgresql+psycopg://nobody:secret@127.0.0.1:{port}/none"\n')
    scheduler = Scheduler(Toolbox.load(cwd=tmp_path, plugins=["schedule"], host=host), poll_s=0.01)
    running = asyncio.create_task(scheduler.run())
    await asyncio.sleep(0.3)
    assert not running.done()         # still there, trying again
    scheduler.stop()
    await asyncio.wait_for(running, 10)
    err = capsys.readouterr().err
    assert "trying again" in err and "secret" not in err
    with pytest.raises(Exception, match="Connection refused|connection failed"):
        await scheduler.run(until_idle=True)

"""Issue 29's schedule promises, each held by a test that a one-line bug in
_claims.py, _timing.py or the worker's lease renewal makes fail: recording
a delivery checks the lease owner and the due time; a cron match exactly at
expiry fires once; a lease shorter than the renewal cap is renewed in time."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from _schedule import clock  # noqa: F401

from pegboard import Toolbox, hookimpl
from pegboard.plugins.schedule import FakeClock, Firing, Scheduler

pytestmark = pytest.mark.anyio

UTC = ZoneInfo("UTC")
START = datetime(2026, 12, 7, 8, 0, 0, tzinfo=UTC).timestamp()  # on the hour: a match of "0 * * * *"


class Host:
    def __init__(self) -> None:
        self.firings: list[Firing] = []
        self.during: Any = None

    @hookimpl
    async def pegboard_schedule_deliver(self, firing: Firing) -> bool:
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


def _store(toolbox: Toolbox) -> Any:
    return toolbox.context_for("schedule").store  # type: ignore[union-attr]


def claim_as(toolbox: Toolbox, worker: str, now: float, lease_s: float = 30.0) -> list[Any]:
    from pegboard.plugins.schedule._claims import claim

    with _store(toolbox).begin() as conn:
        return claim(conn, worker, now, lease_s, 10)


def record_as(toolbox: Toolbox, held: Any, worker: str, now: float, status: str = "delivered") -> str:
    from pegboard.plugins.schedule._claims import record

    with _store(toolbox).begin() as conn:
        return record(conn, held, worker, now, status, None, 3, 30.0)


def job_row(toolbox: Toolbox) -> dict[str, Any]:
    from sqlalchemy import select

    from pegboard.plugins.schedule._tables import tables

    jobs, _, _ = tables()
    with _store(toolbox).begin(read_only=True) as conn:
        (row,) = conn.execute(select(jobs)).fetchall()
    return dict(row._mapping)


async def _cron(session: Any, expression: str) -> dict[str, Any]:
    result = await session.call("CronCreate", {"cron": expression, "prompt": "p", "recurring": True})
    assert not result.is_error, result.text_content()
    return dict(result.structured_content)


# --- recording checks the lease owner and the due time ---------------------------------


async def test_a_late_worker_whose_lease_was_taken_over_cannot_record(toolbox: Toolbox, clock: FakeClock) -> None:
    session = toolbox.session("default")
    result = await session.call("ScheduleWakeup", {"delaySeconds": 60, "reason": "r", "prompt": "p", "noop": False})
    assert not result.is_error, result.text_content()
    clock.advance(60)
    (late,) = claim_as(toolbox, "worker-late", clock(), lease_s=30)
    clock.advance(31)  # its lease ran out while it delivered
    (taker,) = claim_as(toolbox, "worker-taker", clock(), lease_s=30)
    assert taker.firing.id == late.firing.id
    # the late worker's record changes nothing: the job is the taker's
    assert record_as(toolbox, late, "worker-late", clock()) == "lost"
    row = job_row(toolbox)
    assert row["lease_owner"] == "worker-taker" and row["fired"] == 0
    assert record_as(toolbox, taker, "worker-taker", clock()) == "delivered"


async def test_a_worker_cannot_record_an_old_firing_over_its_newer_claim(toolbox: Toolbox, clock: FakeClock) -> None:
    session = toolbox.session("default")
    job = await _cron(session, "*/5 * * * *")
    clock.set(datetime.fromisoformat(job["next_fire"]).timestamp())
    (old,) = claim_as(toolbox, "worker-a", clock(), lease_s=30)
    clock.advance(31)
    (taken,) = claim_as(toolbox, "worker-b", clock(), lease_s=30)
    assert record_as(toolbox, taken, "worker-b", clock()) == "delivered"
    next_due = job_row(toolbox)["next_due"]
    assert next_due > old.job.next_due
    clock.set(job_row(toolbox)["next_fire"])
    (new,) = claim_as(toolbox, "worker-a", clock(), lease_s=30)  # the same worker, the next firing
    assert new.job.next_due == next_due
    # worker-a holds the lease again, but on another due time: the old firing records nothing
    assert record_as(toolbox, old, "worker-a", clock()) == "lost"
    row = job_row(toolbox)
    assert row["next_due"] == next_due and row["lease_owner"] == "worker-a" and row["fired"] == 1
    assert record_as(toolbox, new, "worker-a", clock()) == "delivered"
    assert job_row(toolbox)["fired"] == 2


# --- a cron match exactly at expiry ------------------------------------------------------


def _hourly_job() -> Any:
    from pegboard.plugins.schedule._timing import MAX_AGE_S, JobTiming

    return JobTiming(id="j1", kind="cron", cron="0 * * * *", zone="UTC", recurring=True, created_at=START,
                     expires_at=START + MAX_AGE_S)


def test_a_match_exactly_at_expiry_is_one_plan_the_last() -> None:
    from pegboard.plugins.schedule._timing import catch_up, plans_after

    job = _hourly_job()
    plans = list(plans_after(job, job.created_at))
    dues = [p.due for p in plans]
    assert dues == sorted(set(dues))  # each due time once, in order
    assert dues.count(job.expires_at) == 1
    assert plans[-1].due == plans[-1].fire == job.expires_at and plans[-1].last
    assert not any(p.last for p in plans[:-1])
    assert len(plans) == 7 * 24  # the hourly matches after creation, the one at expiry being the last
    # after the expiry firing nothing is left, however late the worker looks
    assert list(plans_after(job, job.expires_at)) == []
    assert catch_up(job, job.expires_at, job.expires_at + 86400) == (0, None)


async def test_a_job_whose_expiry_is_a_match_fires_there_once(toolbox: Toolbox, host: Host,
                                                              clock: FakeClock) -> None:
    session = toolbox.session("default")
    job = await _cron(session, "0 * * * *")
    expires = START + 7 * 86400
    scheduler = Scheduler(toolbox)
    clock.set(expires - 1800)  # everything before the expiry fires as one catch-up firing
    await scheduler.run_once()
    for _ in range(5):
        clock.advance(1800)
        await scheduler.run_once()
    at_expiry = [f for f in host.firings if f.due_at == expires]
    assert len(at_expiry) == 1 and at_expiry[0].last and at_expiry[0].missed == 0
    assert at_expiry[0].id == f"{job['id']}@2026-12-14T08:00:00Z"
    assert host.firings[-1] is at_expiry[0]
    assert (await session.call("CronList", {})).structured_content["jobs"] == []


# --- leases shorter than the renewal cap --------------------------------------------------


def test_a_lease_is_renewed_by_its_third_whatever_its_length() -> None:
    from pegboard.plugins.schedule._worker import renewal_interval

    for lease in (0.3, 1.0, 3.0, 14.9, 15.0, 30.0, 600.0):
        assert renewal_interval(lease) <= lease / 3
    assert renewal_interval(600.0) == 5.0


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
async def test_a_short_lease_holds_through_a_long_delivery(toolbox: Toolbox, host: Host) -> None:
    # The real clock: what is under test is the worker's renewals keeping pace with real time.
    lease_s = 3.0  # under the 5 s cap, so a renewal every 5 s would let it lapse
    session = toolbox.session("default")
    result = await session.call("ScheduleWakeup", {"delaySeconds": 60, "reason": "r", "prompt": "p", "noop": False})
    assert not result.is_error, result.text_content()
    # a real clock (moving with time) that starts as the wakeup comes due
    offset = job_row(toolbox)["next_fire"] - time.time()

    def now() -> float:
        return time.time() + offset

    taken_by_another: list[Any] = []

    async def long_delivery(firing: Firing) -> None:
        # twice the lease; another worker tries to take the firing all along
        for _ in range(24):
            await asyncio.sleep(0.25)
            taken_by_another.extend(await asyncio.to_thread(claim_as, toolbox, "other", now()))

    host.during = long_delivery
    recorded: list[str] = []
    scheduler = Scheduler(toolbox, lease_s=lease_s, clock=now, on_done=lambda d: recorded.append(d.status))
    await scheduler.run(until_idle=True)  # run(), not run_once(): the renewals run beside the deliveries
    assert recorded == ["delivered"]
    assert taken_by_another == []

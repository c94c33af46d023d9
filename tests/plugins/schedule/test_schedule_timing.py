"""When jobs fire: cron in a zone across daylight-saving changes, the 7-day
expiry with its last firing, jitter bounds, missed firings, clamping."""

from __future__ import annotations

import itertools
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from pegboard.plugins.schedule._timing import (
    MAX_AGE_S,
    JobTiming,
    catch_up,
    check_cron,
    check_zone,
    clamp_delay,
    first_plan,
    jitter_fraction,
    local_zone_name,
    plans_after,
)

BERLIN = "Europe/Berlin"


def ts(zone: str, *parts: int, fold: int = 0) -> float:
    return datetime(*parts, tzinfo=ZoneInfo(zone), fold=fold).timestamp()  # type: ignore[misc]


def local(t: float, zone: str = BERLIN) -> str:
    return datetime.fromtimestamp(t, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


def cron_job(cron: str, created: float, *, recurring: bool = True, zone: str = BERLIN,
             job_id: str = "job00001") -> JobTiming:
    return JobTiming(job_id, "cron", cron, zone, recurring, created, created + MAX_AGE_S if recurring else None)


def dues(job: JobTiming, n: int) -> list[str]:
    return [local(p.due, job.zone) for p in itertools.islice(plans_after(job, job.created_at), n)]


# --- daylight saving ----------------------------------------------------------


def test_0230_on_the_spring_forward_day_fires_once_just_after_the_gap() -> None:
    # 2026-03-29: Berlin's clocks go from 02:00 CET to 03:00 CEST; 02:30 does not exist.
    job = cron_job("30 2 * * *", ts(BERLIN, 2026, 3, 27, 12, 0))
    assert dues(job, 4) == ["2026-03-28 02:30 CET", "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST",
                            "2026-03-31 02:30 CEST"]


def test_0230_on_the_fall_back_day_fires_once_not_in_both_hours() -> None:
    # 2026-10-25: clocks go from 03:00 CEST back to 02:00 CET; 02:30 happens twice.
    job = cron_job("30 2 * * *", ts(BERLIN, 2026, 10, 23, 12, 0))
    plans = list(itertools.islice(plans_after(job, job.created_at), 4))
    assert [local(p.due) for p in plans] == ["2026-10-24 02:30 CEST", "2026-10-25 02:30 CEST",
                                             "2026-10-26 02:30 CET", "2026-10-27 02:30 CET"]
    # 25 hours between the two firings around the change: the repeated hour is not fired again
    assert plans[2].due - plans[1].due == 25 * 3600


def test_a_wildcard_hour_fires_in_both_repeated_hours_as_cron_does() -> None:
    job = cron_job("30 * * * *", ts(BERLIN, 2026, 10, 25, 1, 0))
    assert dues(job, 4) == ["2026-10-25 01:30 CEST", "2026-10-25 02:30 CEST", "2026-10-25 02:30 CET",
                            "2026-10-25 03:30 CET"]


def test_a_one_shot_job_due_in_the_spring_gap_fires_at_three() -> None:
    job = cron_job("30 2 29 3 *", ts(BERLIN, 2026, 3, 28, 12, 0), recurring=False)
    plan = first_plan(job)
    assert plan is not None and plan.last
    assert local(plan.due) == "2026-03-29 03:00 CEST"


def test_the_same_expression_means_local_time_in_each_zone() -> None:
    created = ts("UTC", 2026, 6, 1, 0, 0)
    berlin = first_plan(cron_job("0 9 * * *", created, zone=BERLIN))
    new_york = first_plan(cron_job("0 9 * * *", created, zone="America/New_York"))
    assert berlin is not None and new_york is not None
    assert local(berlin.due, BERLIN) == "2026-06-01 09:00 CEST"
    assert local(new_york.due, "America/New_York") == "2026-06-01 09:00 EDT"
    assert new_york.due - berlin.due == 6 * 3600


# --- expiry ---------------------------------------------------------------------


def test_a_recurring_job_fires_until_seven_days_then_once_more_and_ends() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 20)
    job = cron_job("0 9 * * *", created)
    plans = list(plans_after(job, created))
    assert [local(p.due) for p in plans[:-1]] == [f"2026-05-{d:02d} 09:00 CEST" for d in range(5, 12)]
    last = plans[-1]
    assert last.last and last.due == last.fire == created + 7 * 86400
    assert not any(p.last for p in plans[:-1])


def test_a_job_whose_matches_all_fall_after_expiry_still_fires_once_at_expiry() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 0)
    plans = list(plans_after(cron_job("0 0 1 1 *", created), created))
    assert len(plans) == 1 and plans[0].last and plans[0].due == created + MAX_AGE_S


# --- jitter ---------------------------------------------------------------------


def test_jitter_is_fixed_by_the_id_and_spread_over_ids() -> None:
    assert jitter_fraction("abc12345") == jitter_fraction("abc12345")
    fractions = [jitter_fraction(f"{n:08x}") for n in range(2000)]
    assert all(0 <= f < 1 for f in fractions)
    assert min(fractions) < 0.05 and max(fractions) > 0.95   # the whole range is used


@pytest.mark.parametrize("cron, period", [("*/5 * * * *", 300), ("0 * * * *", 3600), ("0 9 * * *", 86400)])
def test_a_recurring_job_is_late_by_at_most_a_tenth_of_its_period_and_fifteen_minutes(cron: str,
                                                                                      period: int) -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 2)
    bound = min(0.1 * period, 900)
    delays = []
    for n in range(300):
        job = cron_job(cron, created, job_id=f"{n:08x}")
        plan = first_plan(job)
        assert plan is not None
        delays.append(plan.fire - plan.due)
    assert all(0 <= d <= bound for d in delays)
    assert max(delays) > 0.8 * bound   # and it really spreads them


def test_a_one_shot_on_the_hour_or_half_hour_fires_up_to_90_s_early_and_others_on_time() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 2)
    early = []
    for n in range(300):
        on_the_hour = first_plan(cron_job("0 15 4 5 *", created, recurring=False, job_id=f"{n:08x}"))
        half_past = first_plan(cron_job("30 15 4 5 *", created, recurring=False, job_id=f"{n:08x}"))
        odd = first_plan(cron_job("7 15 4 5 *", created, recurring=False, job_id=f"{n:08x}"))
        assert on_the_hour and half_past and odd
        early += [on_the_hour.due - on_the_hour.fire, half_past.due - half_past.fire]
        assert odd.fire == odd.due
    assert all(0 <= e <= 90 for e in early) and max(early) > 80


def test_a_one_shot_is_never_moved_before_it_was_made() -> None:
    created = ts(BERLIN, 2026, 5, 4, 14, 59, 50)
    job = cron_job("0 15 4 5 *", created, recurring=False, job_id="ffffffff")
    assert jitter_fraction(job.id) > 0.5
    plan = first_plan(job)
    assert plan is not None and plan.fire == created


def test_jitter_survives_a_restart_because_it_is_computed_not_stored() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 2)
    a = list(itertools.islice(plans_after(cron_job("*/10 * * * *", created, job_id="1234abcd"), created), 5))
    b = list(itertools.islice(plans_after(cron_job("*/10 * * * *", created, job_id="1234abcd"), created), 5))
    assert a == b


# --- missed firings -------------------------------------------------------------


def test_firings_missed_while_no_worker_ran_are_counted_and_the_next_is_ahead() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 2)
    job = cron_job("*/10 * * * *", created, job_id="00000000")   # fraction 0: no jitter
    first = first_plan(job)
    assert first is not None and local(first.due) == "2026-05-04 10:10 CEST"
    now = ts(BERLIN, 2026, 5, 4, 12, 5)
    missed, following = catch_up(job, first.due, now)
    assert missed == 11        # 10:20 ... 12:00
    assert following is not None and local(following.due) == "2026-05-04 12:10 CEST"


def test_missing_the_expiry_too_makes_the_firing_the_last() -> None:
    created = ts(BERLIN, 2026, 5, 4, 10, 0)
    job = cron_job("0 9 * * *", created)
    first = first_plan(job)
    assert first is not None
    missed, following = catch_up(job, first.due, created + 30 * 86400)
    assert following is None and missed == 7   # six more mornings and the expiry


def test_a_wakeup_has_no_later_firing() -> None:
    job = JobTiming("w0000001", "wakeup", None, BERLIN, False, 1000.0, None)
    assert catch_up(job, 1300.0, 99_999.0) == (0, None)


# --- small rules ------------------------------------------------------------------


@pytest.mark.parametrize("given, clamped", [(0, 60), (-5, 60), (59.2, 60), (60, 60), (270, 270), (270.4, 271),
                                            (3600, 3600), (86400, 3600)])
def test_delay_is_clamped_to_60_to_3600(given: float, clamped: int) -> None:
    assert clamp_delay(given) == clamped


@pytest.mark.parametrize("expression, message", [
    ("* * * *", "has 4 fields"),
    ("0 0 * * * *", "has 6 fields"),
    ("@daily", "has 1 field;"),
    ("61 * * * *", "Bad minute"),
    ("0 0 30 2 *", "Bad day-of-month"),
])
def test_bad_cron_expressions_say_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_cron(expression)


def test_cron_fields_are_normalised() -> None:
    assert check_cron("  */5  *\t* * 1-5 ") == "*/5 * * * 1-5"


def test_zones_are_checked_and_the_machines_zone_is_an_iana_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert check_zone("Asia/Kolkata") == "Asia/Kolkata"
    with pytest.raises(ValueError, match="not a time zone"):
        check_zone("Mars/Olympus")
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    assert local_zone_name() == "America/Sao_Paulo"
    monkeypatch.setenv("TZ", "Nowhere/Land")
    check_zone(local_zone_name())   # falls back to the machine's file, or UTC

"""ScheduleWakeup, CronCreate, CronList and CronDelete through real sessions
and a real store, with time from an injected clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from _schedule import clock  # noqa: F401

from pegboard import PermissionRequest, Toolbox
from pegboard.plugins.schedule import FakeClock

pytestmark = pytest.mark.anyio

TOKYO = ZoneInfo("Asia/Tokyo")
START = datetime(2026, 12, 7, 9, 0, 10, tzinfo=TOKYO).timestamp()   # Mon 09:00:10 JST


@pytest.fixture
def tokyo(user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.schedule]\ntimezone = "Asia/Tokyo"\n')


def load(root: Path) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["schedule"])


async def call(session: Any, name: str, args: dict[str, Any]) -> Any:
    return await session.call(name, args)


# --- ScheduleWakeup -----------------------------------------------------------------


async def test_a_wakeup_is_clamped_and_its_time_shown_in_the_configured_zone(tmp_path: Path, clock: FakeClock,
                                                                             tokyo: None) -> None:
    session = load(tmp_path).session("default")
    result = await call(session, "ScheduleWakeup", {"delaySeconds": 5, "reason": "build is running",
                                                    "prompt": "check the build", "noop": False})
    assert not result.is_error, result.text_content()
    text = result.text_content()
    assert "Mon 2026-12-07 09:01:10 JST (Asia/Tokyo), in 1 min" in text
    assert "delaySeconds 5 was clamped to 60, the minimum (60-3600)" in text
    data = result.structured_content
    assert data["delaySeconds"] == 60 and data["at"] == "2026-12-07T09:01:10+09:00"
    assert data["firing_id"] == f"{data['id']}@2026-12-07T00:01:10Z"
    long = await call(session, "ScheduleWakeup", {"delaySeconds": 7200, "reason": "idle", "prompt": "p",
                                                  "noop": True})
    assert "clamped to 3600, the maximum" in long.text_content()
    assert long.structured_content["at"] == "2026-12-07T10:00:10+09:00"


async def test_a_wakeup_needs_its_fields_unless_it_stops(tmp_path: Path, clock: FakeClock) -> None:
    session = load(tmp_path).session("default")
    result = await call(session, "ScheduleWakeup", {"delaySeconds": 120, "prompt": "again"})
    assert result.is_error
    assert "needs reason, noop" in result.text_content() and "Nothing was scheduled" in result.text_content()
    listing = await call(session, "CronList", {})
    assert "No scheduled jobs" in listing.text_content()
    stopped = await call(session, "ScheduleWakeup", {"stop": True})
    assert not stopped.is_error and "no wake-up was pending" in stopped.text_content()


async def test_a_session_has_one_wakeup_a_new_one_replaces_it_and_stop_cancels_it(tmp_path: Path,
                                                                                  clock: FakeClock,
                                                                                  tokyo: None) -> None:
    session = load(tmp_path).session("default")
    first = await call(session, "ScheduleWakeup", {"delaySeconds": 600, "reason": "a", "prompt": "p",
                                                   "noop": False})
    second = await call(session, "ScheduleWakeup", {"delaySeconds": 120, "reason": "b", "prompt": "p",
                                                    "noop": True})
    assert "It replaces the wake-up that was set for Mon 2026-12-07 09:10:10 JST" in second.text_content()
    assert second.structured_content["replaced"] == first.structured_content["id"]
    listing = (await call(session, "CronList", {})).structured_content["jobs"]
    assert [j["id"] for j in listing] == [second.structured_content["id"]]
    stopped = await call(session, "ScheduleWakeup", {"stop": True})
    assert "the wake-up set for Mon 2026-12-07 09:02:10 JST is cancelled" in stopped.text_content()
    assert (await call(session, "CronList", {})).structured_content["jobs"] == []


async def test_wakeup_events_tell_the_host(tmp_path: Path, clock: FakeClock) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Host:
        from pegboard import hookimpl

        @hookimpl
        def pegboard_event(self, session: Any, kind: str, data: dict[str, Any]) -> None:
            seen.append((kind, data))

    session = Toolbox.load(cwd=tmp_path, plugins=["schedule"], host=Host()).session("default")
    await call(session, "ScheduleWakeup", {"delaySeconds": 90, "reason": "waiting on CI", "prompt": "p",
                                           "noop": True})
    kinds = [k for k, _ in seen]
    assert kinds == ["schedule.wakeup"]
    assert seen[0][1]["reason"] == "waiting on CI" and seen[0][1]["noop"] is True


# --- CronCreate, CronList, CronDelete ------------------------------------------------------


async def test_create_list_and_delete_a_recurring_job(tmp_path: Path, clock: FakeClock, tokyo: None) -> None:
    session = load(tmp_path).session("default")
    created = await call(session, "CronCreate", {"cron": "*/15 * * * *", "prompt": "check the deploy"})
    assert not created.is_error, created.text_content()
    text = created.text_content()
    job_id = created.structured_content["id"]
    assert f"Scheduled recurring job {job_id}: Every 15th minute of every hour (*/15 * * * *, Asia/Tokyo)" \
        in text
    assert "It expires Mon 2026-12-14 09:00:10 JST, 7 days from now, with one last firing." in text
    data = created.structured_content
    assert data["next_due"] == "2026-12-07T09:15:00+09:00"
    jitter = datetime.fromisoformat(data["next_fire"]).timestamp() - datetime.fromisoformat(data["next_due"]).timestamp()
    assert 0 <= jitter <= 90   # 10% of 15 minutes
    listing = await call(session, "CronList", {})
    assert "1 cron job of at most 50; times in Asia/Tokyo:" in listing.text_content()
    assert f"- {job_id}  */15 * * * *  recurring, next Mon 2026-12-07 09:1" in listing.text_content()
    assert "'check the deploy'" in listing.text_content()
    deleted = await call(session, "CronDelete", {"id": job_id})
    assert not deleted.is_error and "it will not fire again" in deleted.text_content()
    assert "No scheduled jobs" in (await call(session, "CronList", {})).text_content()
    again = await call(session, "CronDelete", {"id": job_id})
    assert again.is_error and "No job" in again.text_content()


async def test_a_one_shot_job_fires_once_at_its_next_match(tmp_path: Path, clock: FakeClock, tokyo: None) -> None:
    session = load(tmp_path).session("default")
    created = await call(session, "CronCreate", {"cron": "37 14 7 12 *", "prompt": "remind me",
                                                 "recurring": False, "durable": False})
    text = created.text_content()
    assert "Scheduled one-shot job" in text and "It fires once, then it is deleted." in text
    assert "durable=false is not needed here" in text
    assert created.structured_content["next_fire"] == "2026-12-07T14:37:00+09:00"   # not :00/:30: no jitter
    assert created.structured_content["expires"] is None


async def test_bad_expressions_are_refused_with_the_reason(tmp_path: Path, clock: FakeClock) -> None:
    session = load(tmp_path).session("default")
    for cron, words in [("*/5 * * *", "has 4 fields"), ("0 25 * * *", "Bad hour")]:
        result = await call(session, "CronCreate", {"cron": cron, "prompt": "x"})
        assert result.is_error and words in result.text_content() and "Nothing was scheduled" in result.text_content()


async def test_a_session_may_have_fifty_jobs(tmp_path: Path, clock: FakeClock) -> None:
    toolbox = load(tmp_path)
    session = toolbox.session("default")
    for n in range(50):
        result = await call(session, "CronCreate", {"cron": f"{n} * * * *", "prompt": f"job {n}"})
        assert not result.is_error, result.text_content()
    refused = await call(session, "CronCreate", {"cron": "59 * * * *", "prompt": "one too many"})
    assert refused.is_error and "already has 50 scheduled jobs" in refused.text_content()
    # a wake-up is not a cron job; another session has its own fifty
    wakeup = await call(session, "ScheduleWakeup", {"delaySeconds": 60, "reason": "r", "prompt": "p", "noop": False})
    assert not wakeup.is_error
    other = await call(toolbox.session("default"), "CronCreate", {"cron": "59 * * * *", "prompt": "mine"})
    assert not other.is_error
    listing = await call(session, "CronList", {})
    assert listing.text_content().startswith("50 cron jobs of at most 50 and a wake-up")


async def test_sessions_see_and_delete_only_their_own_jobs(tmp_path: Path, clock: FakeClock) -> None:
    toolbox = load(tmp_path)
    mine, theirs = toolbox.session("default"), toolbox.session("default")
    job_id = (await call(mine, "CronCreate", {"cron": "0 9 * * *", "prompt": "mine"})).structured_content["id"]
    assert "No scheduled jobs" in (await call(theirs, "CronList", {})).text_content()
    refused = await call(theirs, "CronDelete", {"id": job_id})
    assert refused.is_error and "No job" in refused.text_content()
    assert len((await call(mine, "CronList", {})).structured_content["jobs"]) == 1


async def test_times_are_in_the_machines_zone_when_none_is_configured(tmp_path: Path, clock: FakeClock,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    session = load(tmp_path).session("default")
    created = await call(session, "CronCreate", {"cron": "0 9 * * *", "prompt": "standup"})
    assert "(0 9 * * *, America/New_York)" in created.text_content()
    # START is Sun 19:00:10 EST in New York: the next 09:00 there is Monday's
    assert created.structured_content["next_due"] == "2026-12-07T09:00:00-05:00"


def test_an_unknown_zone_in_config_is_reported_with_its_file(tmp_path: Path, user_config: Callable[[str], Path]) -> None:
    path = user_config('[plugins.schedule]\ntimezone = "Europe/Atlantis"\n')
    toolbox = load(tmp_path)
    error = toolbox.records["schedule"].error or ""
    assert str(path) in error and "timezone" in error and "not a time zone" in error


async def test_jobs_last_beyond_the_process_and_go_with_their_session(tmp_path: Path, clock: FakeClock) -> None:
    first = load(tmp_path).session("default", session_id="conv-7")
    job_id = (await call(first, "CronCreate", {"cron": "0 9 * * *", "prompt": "p"})).structured_content["id"]
    await first.aclose()
    resumed = load(tmp_path).session("default", session_id="conv-7")
    assert resumed.resumed
    assert [j["id"] for j in (await call(resumed, "CronList", {})).structured_content["jobs"]] == [job_id]
    from pegboard._engine.session_records import SessionRecords

    SessionRecords(resumed.toolbox).delete(["conv-7"])
    again = load(tmp_path).session("default", session_id="conv-7")
    assert (await call(again, "CronList", {})).structured_content["jobs"] == []


async def test_a_store_that_cannot_be_reached_is_said_plainly(tmp_path: Path, clock: FakeClock,
                                                              user_config: Callable[[str], Path]) -> None:
    import socket

    with socket.socket() as probe:   # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    user_config(f'[store]\nurl = "postgresql+psycopg://nobody:secret@127.0.0.1:{port}/none"\n')
    session = load(tmp_path).session("default")
    result = await call(session, "CronCreate", {"cron": "0 9 * * *", "prompt": "p"})
    assert result.is_error
    text = result.text_content()
    assert "The schedule store could not be reached, so nothing was scheduled" in text
    assert "secret" not in text and "***" in text


# --- permissions and who gets the tools ---------------------------------------------------


def test_every_tool_is_allowed_and_auto_mode_asks_its_classifier_about_cron_create(tmp_path: Path) -> None:
    toolbox = load(tmp_path)
    for mode, expected in [("default", "allow"), ("auto", "ask")]:
        session = toolbox.session(mode)
        for name in ("ScheduleWakeup", "CronCreate", "CronList", "CronDelete"):
            request = PermissionRequest(tool=toolbox.tools[name], input={}, session=session, policy=session.policy)
            decision = toolbox.permissions.evaluate(request)
            want = expected if name == "CronCreate" else "allow"
            assert decision.decision == want, (mode, name, decision)


def test_the_tools_load_as_the_reference_says_and_sub_agents_do_not_get_them(tmp_path: Path) -> None:
    toolbox = load(tmp_path)
    tools = toolbox.tools
    assert tools["ScheduleWakeup"].loading == "always"
    assert {tools[n].loading for n in ("CronCreate", "CronList", "CronDelete")} == {"deferred"}
    assert [n for n in ("ScheduleWakeup", "CronCreate", "CronList", "CronDelete") if tools[n].read_only] == ["CronList"]
    parent = toolbox.session("default")
    child = parent.child()
    offered = {t.name for t in child.offered()}
    assert not offered & {"ScheduleWakeup", "CronCreate", "CronList", "CronDelete"}
    assert "ScheduleWakeup" in {t.name for t in parent.offered()}


def test_schemas_have_claude_codes_names(tmp_path: Path) -> None:
    tools = load(tmp_path).tools
    assert set(tools["ScheduleWakeup"].schema["properties"]) == {"delaySeconds", "reason", "prompt", "stop", "noop"}
    assert set(tools["CronCreate"].schema["properties"]) == {"cron", "prompt", "recurring", "durable"}
    assert tools["CronCreate"].schema["required"] == ["cron", "prompt"]
    assert set(tools["CronDelete"].schema["properties"]) == {"id"}
    assert tools["CronList"].schema.get("properties", {}) == {}


def test_listing_the_tools_imports_neither_the_store_nor_cron(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys\nfrom pegboard import Toolbox\n"
            f"toolbox = Toolbox.load(cwd={str(tmp_path)!r}, plugins=['schedule'], listing=True)\n"
            "[t.schema for t in toolbox.tools.values()]\n"
            "print(sorted(m for m in ('cronsim', 'sqlalchemy', 'pegboard._services.store', 'asyncio') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_plugins_exported_names_resolve() -> None:
    import pegboard.plugins.schedule as schedule

    for name in schedule.__all__:
        assert getattr(schedule, name) is not None, name
    with pytest.raises(AttributeError):
        schedule.NoSuchThing  # noqa: B018

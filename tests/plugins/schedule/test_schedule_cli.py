"""``pegboard schedule worker|list|delete`` and what ``pegboard doctor`` says
about the scheduler."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pegboard import Toolbox
from pegboard._cli.main import cli
from pegboard.plugins.schedule import FakeClock, use_clock
from pegboard.plugins.schedule._cli import schedule_group

PEGBOARD = str(Path(sys.executable).with_name("pegboard"))


@pytest.fixture
def project(tmp_path: Path, user_config: Any) -> Path:
    user_config('[plugins.schedule]\ntimezone = "UTC"\n')
    root = tmp_path / "project"
    root.mkdir()
    return root


def run(project: Path, *args: str) -> tuple[int, str, str]:
    if args[0] == "schedule":   # (the top group learns plugin commands once per process: call ours directly)
        command, args = schedule_group, (args[1], "--cwd", str(project), *args[2:])
    else:
        command, args = cli, ("--cwd", str(project), *args)
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def make_jobs(project: Path, now: float) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        toolbox = Toolbox.load(cwd=project, plugins=["schedule"])
        a = await toolbox.session("default", session_id="conv-a").call(
            "ScheduleWakeup", {"delaySeconds": 60, "reason": "r", "prompt": "wake up, conv-a", "noop": False})
        b = await toolbox.session("default", session_id="conv-b").call(
            "CronCreate", {"cron": "*/30 * * * *", "prompt": "check conv-b's build"})
        return a.structured_content["id"], b.structured_content["id"]

    with use_clock(FakeClock(now)):
        return asyncio.run(go())


@pytest.fixture
def in_the_past() -> Iterator[float]:
    yield time.time() - 3 * 3600


def test_doctor_says_nothing_is_stored_without_creating_the_store(project: Path, isolated_env: Path) -> None:
    code, out, _ = run(project, "doctor")
    assert "OK    schedule: scheduler: no jobs: the store is not created yet" in out
    assert not (isolated_env / "data" / "pegboard" / "pegboard.db").exists()


@pytest.mark.slow
def test_list_delete_and_doctor_over_jobs_of_two_sessions(project: Path, in_the_past: float) -> None:
    wake, job = make_jobs(project, in_the_past)
    code, out, _ = run(project, "schedule", "list")
    assert code == 0
    assert f"{wake}  session conv-a  wake-up (one-shot)" in out and "due" in out
    assert f"{job}  session conv-b  */30 * * * * (recurring)" in out
    assert "check conv-b's build" in out
    assert "workers: no worker is running and 2 jobs are overdue" in out
    assert "no worker has ever claimed a firing from this store" in out
    code, out, _ = run(project, "schedule", "list", "--json")
    listed = json.loads(out)
    assert {j["id"]: j["session_id"] for j in listed["jobs"]} == {wake: "conv-a", job: "conv-b"}
    assert listed["status"]["overdue"] == 2 and listed["status"]["workers"] == []
    code, out, _ = run(project, "doctor")
    assert "WARN  schedule: worker: no worker is running and 2 jobs are overdue" in out
    assert "OK    schedule: jobs: 2 jobs in sqlite:///" in out
    code, out, err = run(project, "schedule", "delete", job, "nosuchjob")
    assert code == 1
    assert f"deleted {job} of session conv-b: it will not fire again" in out and "no job nosuchjob" in err
    assert [j["id"] for j in json.loads(run(project, "schedule", "list", "--json")[1])["jobs"]] == [wake]


@pytest.mark.slow
def test_the_worker_delivers_with_exec_and_doctor_sees_its_claim(project: Path, tmp_path: Path,
                                                                 in_the_past: float) -> None:
    wake, job = make_jobs(project, in_the_past)
    out_file = tmp_path / "delivered.jsonl"
    command = f"{sys.executable} -c \"import sys; open({str(out_file)!r}, 'a').write(sys.stdin.read())\""
    started = time.time()
    done = subprocess.run([PEGBOARD, "--cwd", str(project), "schedule", "worker", "--exec", command, "--once"],
                          capture_output=True, text=True, timeout=60, env=os.environ)
    assert done.returncode == 0, done.stderr
    delivered = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(d["job_id"] for d in delivered) == sorted([wake, job])
    missed = {d["job_id"]: d["missed"] for d in delivered}
    # Six half hours came due in the three hours: one firing stands for them.
    # A recurring firing goes up to 10% of its period late (3 minutes here), so
    # when the worker ran within that of a :00 or :30, the last may not be due yet.
    last_boundary = time.time() // 1800 * 1800
    expected = {4, 5} if last_boundary > started - 180 else {5}
    assert missed[wake] == 0 and missed[job] in expected, (missed, started)
    assert "schedule worker" in done.stderr and f"delivering to `{command}`" in done.stderr
    assert sum(line.startswith("delivered ") for line in done.stdout.splitlines()) == 2
    code, out, _ = run(project, "doctor")
    assert "OK    schedule: worker: no worker is running; the last claim was" in out
    assert "nothing is overdue" in out
    code, out, _ = run(project, "schedule", "list")
    assert "stopped, seen" in out and "claimed 2, delivered 2, failed 0" in out


def test_a_worker_with_nothing_to_deliver_to_refuses_to_start(project: Path) -> None:
    code, _, err = run(project, "schedule", "worker", "--once")
    assert code == 2 and "nothing delivers firings here" in err and "--exec CMD" in err


def test_the_embedding_example_in_the_docs_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    import re

    guide = Path(__file__).parents[3] / "docs" / "plugins" / "schedule.md"
    block = re.search(r"## In an embedding host\n.*?```python\n(.*?)```", guide.read_text(), re.S)
    assert block
    monkeypatch.chdir(tmp_path)
    clock = FakeClock(time.time())
    namespace: dict[str, Any] = {}
    with use_clock(clock):
        toolbox = Toolbox.load(cwd=tmp_path, plugins=["schedule"])
        asyncio.run(toolbox.session("default", session_id="doc-1").call(
            "ScheduleWakeup", {"delaySeconds": 60, "reason": "r", "prompt": "from the docs", "noop": False}))
        clock.advance(61)
        exec(compile(block.group(1), "schedule.md", "exec"), namespace)
    assert "[doc-1] from the docs" in capsys.readouterr().out


@pytest.mark.slow
def test_a_worker_on_a_store_newer_than_this_pegboard_stops_and_says_so(project: Path, isolated_env: Path,
                                                                       in_the_past: float) -> None:
    import sqlite3

    make_jobs(project, in_the_past)
    with sqlite3.connect(isolated_env / "data" / "pegboard" / "pegboard.db") as db:
        db.execute("UPDATE pegboard_schema SET version = 99 WHERE component = 'schedule'")
    done = subprocess.run([PEGBOARD, "--cwd", str(project), "schedule", "worker", "--exec", "true", "--once"],
                          capture_output=True, text=True, timeout=60, env=os.environ)
    assert done.returncode == 1
    assert "schedule tables are at schema version 99, newer than this pegboard knows (1)" in done.stderr

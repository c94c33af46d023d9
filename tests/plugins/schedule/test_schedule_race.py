"""Real worker processes racing over one store: every firing delivered
exactly once; a worker SIGKILLed mid-delivery loses its lease and its firing
is delivered again under the same id. PostgreSQL (4 workers) and SQLite (2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox

PEGBOARD = str(Path(sys.executable).with_name("pegboard"))
DEADLINE_S = 90


def schedule_store(project: Path) -> Any:
    return Toolbox.load(cwd=project, plugins=["schedule"]).context_for("schedule").store  # type: ignore[union-attr]


def add_wakeups(store: Any, project: Path, count: int, due: float) -> set[str]:
    """``count`` sessions, each with a wake-up due at ``due``: the firing ids."""
    from pegboard.plugins.schedule._display import firing_id
    from pegboard.plugins.schedule._jobs import set_wakeup

    ids = set()
    with store.begin() as conn:
        for n in range(count):
            job, _ = set_wakeup(conn, session_id=f"race-{n:03d}", prompt=f"prompt {n}", reason="race", noop=False,
                                due=due, zone="UTC", root=str(project), now=due - 60)
            ids.add(firing_id(job.id, job.next_due))
    return ids


def start_worker(project: Path, command: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([PEGBOARD, "--cwd", str(project), "schedule", "worker", "--exec", command,
                             "--poll", "0.1", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ,
                            start_new_session=True)


def workers_alive(store: Any) -> int:
    from pegboard.plugins.schedule._status import read_status

    return len(read_status(store, time.time()).alive)


def delivered(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def wait_for(condition: Any, what: str, procs: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        for proc in procs:
            if proc.poll() is not None and proc.returncode not in (0, -signal.SIGKILL):
                raise AssertionError(f"a worker exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("store_url, workers", [("postgresql", 4), ("sqlite", 2)], indirect=["store_url"])
def test_racing_workers_deliver_each_of_200_firings_exactly_once(store_url: str, workers: int, tmp_path: Path,
                                                                 user_config: Any) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = tmp_path / "delivered.jsonl"
    # a delivery takes a little while, so that every worker has some in hand at once
    command = f"sh -c 'cat >> \"$0\"; sleep 0.02' {out}"
    store = schedule_store(project)
    store.ready()
    procs = [start_worker(project, command, "--concurrency", "4") for _ in range(workers)]
    try:
        wait_for(lambda: workers_alive(store) == workers, f"{workers} workers to start", procs)
        expected = add_wakeups(store, project, 200, time.time())   # all due now, while every worker polls
        wait_for(lambda: len(delivered(out)) >= 200, "200 deliveries", procs)
        time.sleep(0.5)   # any duplicate would land by now
    finally:
        stop(procs)
    assert [p.returncode for p in procs] == [0] * workers, [p.stderr.read() if p.stderr else "" for p in procs]
    got = Counter(d["firing_id"] for d in delivered(out))
    assert set(got) == expected
    assert [fid for fid, n in got.items() if n != 1] == []
    from sqlalchemy import func, select

    from pegboard.plugins.schedule._tables import tables

    jobs, firings, _ = tables()
    with store.begin(read_only=True) as conn:
        by_worker = dict(conn.execute(select(firings.c.worker, func.count()).group_by(firings.c.worker)).all())
        statuses = set(conn.execute(select(firings.c.status)).scalars())
        left = conn.execute(select(func.count()).select_from(jobs)).scalar_one()
    assert statuses == {"delivered"} and sum(by_worker.values()) == 200 and left == 0
    assert len(by_worker) >= 2, by_worker   # they really raced
    print("firings delivered by each worker:", sorted(by_worker.values()))


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["postgresql", "sqlite"], indirect=True)
def test_a_worker_killed_mid_delivery_has_its_firing_delivered_again_with_the_same_id(store_url: str,
                                                                                       tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = tmp_path / "delivered.jsonl"
    child = tmp_path / "hung.pid"
    # The doomed worker hands its first firing over (it lands in the file) and hangs before exiting 0.
    hang = f"sh -c 'cat >> \"$0\"; echo $$ > \"$1\"; exec sleep 300' {out} {child}"
    expected = add_wakeups(schedule_store(project), project, 20, time.time() - 1)
    doomed = start_worker(project, hang, "--concurrency", "1", "--lease", "2")
    procs = [doomed]
    try:
        wait_for(lambda: child.exists() and child.read_text().strip() != "", "the hanging delivery", procs)
        os.killpg(doomed.pid, signal.SIGKILL)            # the worker dies mid-delivery
        os.kill(int(child.read_text()), signal.SIGKILL)  # (and so does what it was running)
        doomed.wait(timeout=10)
        handed = delivered(out)
        assert len(handed) == 1
        survivor = start_worker(project, f"sh -c 'cat >> \"$0\"' {out}", "--lease", "2")
        procs.append(survivor)
        wait_for(lambda: len(delivered(out)) >= 21, "every firing, the killed one again", procs)
        time.sleep(0.3)
    finally:
        stop(procs)
    got = delivered(out)
    counts = Counter(d["firing_id"] for d in got)
    assert set(counts) == expected
    again = handed[0]["firing_id"]
    assert counts[again] == 2 and all(n == 1 for fid, n in counts.items() if fid != again)
    second = [d for d in got if d["firing_id"] == again][1]
    assert (second["job_id"], second["session_id"], second["attempt"]) == \
        (handed[0]["job_id"], handed[0]["session_id"], 2)


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_a_worker_whose_stderr_reader_is_gone_still_stops_on_sigterm(store_url: str, tmp_path: Path) -> None:
    """A supervisor killed without its worker leaves the worker's stderr a pipe
    nobody reads: the note SIGTERM prints fails, and the worker must stop anyway."""
    project = tmp_path / "project"
    project.mkdir()
    store = schedule_store(project)
    store.ready()
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([PEGBOARD, "--cwd", str(project), "schedule", "worker", "--exec", "true", "--poll", "0.1"],
                            stdout=subprocess.DEVNULL, stderr=write_end, env=os.environ, start_new_session=True)
    os.close(write_end)
    try:
        wait_for(lambda: workers_alive(store) == 1, "the worker to start", [])
        os.close(read_end)  # the reader is gone: the worker's next write to stderr fails
        read_end = -1
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if read_end >= 0:
            os.close(read_end)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

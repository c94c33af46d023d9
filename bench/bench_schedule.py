"""What the scheduler costs a firing, and how it scales across workers, on PostgreSQL.

    .venv/bin/python bench/bench_schedule.py [--firings N] [--rounds R]

1. One worker (``Scheduler``, one delivery at a time, a delivery that does
   nothing) against a bare SQL loop on psycopg doing the same claim and
   update: the same claiming statement (``UPDATE ... WHERE id IN (SELECT ...
   FOR UPDATE SKIP LOCKED)``), then per firing the same delete and firing-log
   insert, each in its own transaction. The ratio is the worker's time per
   firing over the loop's (best rounds; the median round's beside it).
   Target: at most 1.5.
2. Four worker processes against one, over the same firings, each worker
   with its default four deliveries at once: firings per second, from the
   moment the firings are due to the last delivery. With deliveries that
   wait 20 ms (a host handing the turn to a model; target: at least 2x),
   and, for information, with deliveries that cost nothing, where the
   database and the machine's cores are all there is to share.

PostgreSQL is at 127.0.0.1:5432 (trust auth); the bench makes a database of
its own and drops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, report  # noqa: E402

PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"
PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
# A delivery that waits this long stands for a host handing the turn to a model.
WAIT_S = 0.02


def isolate(tmp: Path) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(tmp / "no-policy.toml")
    os.environ.pop("PEGBOARD_CONFIG", None)


def toolbox(project: Path, config: Path) -> Any:
    from pegboard import Toolbox

    return Toolbox.load(cwd=project, plugins=["schedule"], config=config)


def add_due(store: Any, count: int, due: float) -> None:
    """``count`` wake-ups of their own sessions, all due at ``due``."""
    from pegboard.plugins.schedule._tables import tables

    jobs, _, _ = tables()
    rows = [{"id": uuid.uuid4().hex[:8], "session_id": f"bench-{n}", "kind": "wakeup", "cron": None,
             "timezone": "UTC", "prompt": f"prompt {n}", "reason": "bench", "noop": False, "recurring": False,
             "root": "/", "created_at": due - 60, "expires_at": None, "next_due": due, "next_fire": due,
             "is_last": True, "attempts": 0, "lease_owner": None, "lease_until": None, "fired": 0,
             "last_fired_at": None} for n in range(count)]
    with store.begin() as conn:
        conn.execute(jobs.insert(), rows)


async def nothing(firing: Any) -> bool:
    return True


async def worker_round(tb: Any, count: int) -> float:
    from pegboard.plugins.schedule import Scheduler

    store = tb.context_for("schedule").store
    add_due(store, count, time.time() - 1)
    scheduler = Scheduler(tb, deliver=nothing, concurrency=1)
    start = time.perf_counter()
    done = await scheduler.run_once()
    took = time.perf_counter() - start
    scheduler._drop_connections()
    assert len(done) == count and all(d.status == "delivered" for d in done), len(done)
    return took / count * 1e6


CLAIM = """
UPDATE schedule_jobs SET lease_owner = %(worker)s, lease_until = %(until)s, attempts = attempts + 1
WHERE id IN (SELECT id FROM schedule_jobs
             WHERE next_fire <= %(now)s AND (lease_until IS NULL OR lease_until <= %(now)s)
             ORDER BY next_fire LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, session_id, next_due, attempts
"""
DONE = "DELETE FROM schedule_jobs WHERE id = %s AND lease_owner = %s AND next_due = %s"
LOG = """
INSERT INTO schedule_firings (id, job_id, session_id, due_at, done_at, status, worker, attempts, missed, detail)
VALUES (%s, %s, %s, %s, %s, 'delivered', %s, %s, 0, NULL) ON CONFLICT (id) DO NOTHING
"""


def bare_round(tb: Any, dsn: str, count: int) -> float:
    import psycopg

    store = tb.context_for("schedule").store
    add_due(store, count, time.time() - 1)
    worker = "bare-loop"
    with psycopg.connect(dsn) as conn:
        start = time.perf_counter()
        handled = 0
        while True:
            now = time.time()
            with conn.cursor() as cur:
                cur.execute(CLAIM, {"worker": worker, "until": now + 30, "now": now})
                rows = cur.fetchall()
            conn.commit()
            if not rows:
                break
            for job_id, session_id, due, attempts in rows:
                with conn.cursor() as cur:
                    cur.execute(DONE, (job_id, worker, due))
                    cur.execute(LOG, (f"{job_id}@{due}", job_id, session_id, due, time.time(), worker, attempts))
                conn.commit()
                handled += 1
        took = time.perf_counter() - start
    assert handled == count, handled
    return took / count * 1e6


# --- several worker processes ------------------------------------------------------


def child(project: str, config: str, delay_s: float) -> None:
    """One worker process: ready, wait for "go", deliver until nothing is due
    (each delivery waiting ``delay_s``), then print when it started and
    ended and how many it delivered."""
    from pegboard.plugins.schedule import Scheduler

    async def waiting(firing: Any) -> bool:
        await asyncio.sleep(delay_s)
        return True

    tb = toolbox(Path(project), Path(config))
    scheduler = Scheduler(tb, deliver=waiting if delay_s else nothing)
    tb.context_for("schedule").store.ready()
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.time()
    done = asyncio.run(scheduler.run_once())
    print(json.dumps({"start": start, "end": time.time(), "delivered": len(done)}), flush=True)


def fleet_round(tb: Any, project: Path, config: Path, workers: int, count: int, delay_s: float = 0.0) -> float:
    """Firings per second delivered by ``workers`` processes."""
    procs = [subprocess.Popen([sys.executable, __file__, "--child", str(project), str(config), str(delay_s)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(workers)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    add_due(tb.context_for("schedule").store, count, time.time() - 1)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["delivered"] for r in results) == count, results
    return count / (max(r["end"] for r in results) - min(r["start"] for r in results))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--firings", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pegboard-bench-schedule-"))
    isolate(tmp)
    import psycopg

    name = f"pegboard_bench_schedule_{os.getpid()}"
    admin = psycopg.connect(PG_ADMIN, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    # Both sides commit twice a firing; with every commit waiting for the disk, the disk is all either
    # measures. Off, for this database only, the ratio shows the scheduler's own cost.
    admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    try:
        project = tmp / "project"
        project.mkdir()
        config = tmp / "config.toml"
        config.write_text(f'[store]\nurl = "{PG_SERVER}/{name}"\n')
        tb = toolbox(project, config)
        tb.context_for("schedule").store.ready()
        dsn = f"host=127.0.0.1 port=5432 user=postgres dbname={name}"
        asyncio.run(worker_round(tb, 200))      # warm: imports, the pool, the statements
        bare_round(tb, dsn, 200)
        ours, bare, ratios = [], [], []
        for n in range(args.rounds):
            if n % 2:
                b = bare_round(tb, dsn, args.firings)
                o = asyncio.run(worker_round(tb, args.firings))
            else:
                o = asyncio.run(worker_round(tb, args.firings))
                b = bare_round(tb, dsn, args.firings)
            ours.append(o)
            bare.append(b)
            ratios.append(o / b)
            print(f"round {n + 1}: worker {o:.0f} us/firing ({1e6 / o:.0f}/s), bare SQL loop {b:.0f} us/firing "
                  f"({1e6 / b:.0f}/s): {o / b:.2f}x")
        best = min(ours) / min(bare)
        print(f"one worker: best {1e6 / min(ours):.0f} firings/s, bare loop best {1e6 / min(bare):.0f}/s; "
              f"median round {statistics.median(ratios):.2f}x")
        fleets = {}
        for delay_s, count in ((0.0, args.firings * 2), (WAIT_S, args.firings)):
            one, four = [], []
            for n in range(max(2, args.rounds // 2)):
                one.append(fleet_round(tb, project, config, 1, count, delay_s))
                four.append(fleet_round(tb, project, config, 4, count, delay_s))
                print(f"fleet round {n + 1}, deliveries of {delay_s * 1000:.0f} ms: 1 worker {one[-1]:.0f}/s, "
                      f"4 workers {four[-1]:.0f}/s: {four[-1] / one[-1]:.2f}x")
            fleets[delay_s] = (max(four) / max(one), [f / o for f, o in zip(four, one)])
        free, waiting = fleets[0.0], fleets[WAIT_S]
        report(
            Ratio("one worker against a bare SQL loop, per firing (PostgreSQL)", best, 1.5,
                  low=min(ratios), high=max(ratios)),
            Ratio(f"4 worker processes against 1, firings per second, deliveries of {WAIT_S * 1000:.0f} ms",
                  waiting[0], 2.0, bound="at least", low=min(waiting[1]), high=max(waiting[1])),
            Ratio("4 worker processes against 1, firings per second, deliveries that cost nothing",
                  free[0], 0, bound="info", low=min(free[1]), high=max(free[1])),
        )
        tb.context_for("schedule").store._store.dispose()
    finally:
        from pegboard._services.store import dispose_all

        dispose_all()
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

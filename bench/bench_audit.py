"""What the audit log costs a call: a Read with ``[audit] enabled = true``
against the same Read with the audit off, on SQLite and on PostgreSQL.

    .venv/bin/python bench/bench_audit.py [--calls N] [--rounds R] [--no-postgres]

Each round times N Reads of a small file with the audit off and N with it
on (in alternating order), the "on" figure including the time to write every
row it queued (the writer's flush), so no write is left over for the next
round. The ratio is best "on" batch against best "off" batch (a busy spell on
a shared machine only ever slows a batch down), with the median round's ratio
beside it. Target: at most 1.3 on SQLite.
PostgreSQL is at 127.0.0.1:5432 (trust auth); the bench makes a database of
its own and drops it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, report  # noqa: E402

PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"


def isolate(tmp: Path) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(tmp / "no-policy.toml")
    os.environ.pop("PEGBOARD_CONFIG", None)


async def timed(session: Any, path: str, calls: int, flush: bool) -> float:
    from pegboard._services.audit import flush_all

    start = time.perf_counter()
    for _ in range(calls):
        result = await session.call("Read", {"file_path": path})
        if result.is_error:
            raise SystemExit(f"Read failed: {result.text_content()}")
    if flush:
        flush_all()
    return (time.perf_counter() - start) / calls * 1e6


async def measure(tmp: Path, url: str, calls: int,
                  rounds: int) -> tuple[float, float, float, float, int, list[float]]:
    from pegboard import Toolbox

    project = tmp / "project"
    project.mkdir(exist_ok=True)
    target = project / "notes.txt"
    target.write_text("".join(f"line {n}: some text to read\n" for n in range(40)))
    config = tmp / f"audit-{uuid.uuid4().hex[:6]}.toml"
    config.write_text(f'[store]\nurl = "{url}"\n[audit]\nenabled = true\n')
    off = Toolbox.load(cwd=project, plugins=["fs"]).session()
    on = Toolbox.load(cwd=project, plugins=["fs"], config=config).session()
    await timed(off, str(target), 200, False)   # warm both: imports, the schema, the pool
    await timed(on, str(target), 200, True)
    ratios, offs, ons = [], [], []
    for n in range(rounds):
        if n % 2:
            on_us = await timed(on, str(target), calls, True)
            off_us = await timed(off, str(target), calls, False)
        else:
            off_us = await timed(off, str(target), calls, False)
            on_us = await timed(on, str(target), calls, True)
        ratios.append(on_us / off_us)
        offs.append(off_us)
        ons.append(on_us)
    return min(ons) / min(offs), statistics.median(ratios), min(offs), min(ons), rounds, ratios


def postgres_database() -> tuple[str, Any] | None:
    try:
        import psycopg

        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                                connect_timeout=5)
    except Exception as exc:  # no driver, or no server
        print(f"PostgreSQL: skipped ({type(exc).__name__}: {exc})")
        return None
    name = f"pegboard_bench_{os.getpid()}"
    admin.execute(f'CREATE DATABASE "{name}"')
    return f"{PG_SERVER}/{name}", (admin, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        isolate(tmp)
        backends = [("SQLite", f"sqlite:///{tmp / 'bench.db'}", 1.3)]
        pg = None if args.no_postgres else postgres_database()
        if pg is not None:
            backends.append(("PostgreSQL", pg[0], None))
        try:
            for label, url, target in backends:
                ratio, median, off_us, on_us, rounds, per_round = asyncio.run(
                    measure(tmp, url, args.calls, args.rounds))
                goal = f" (target <= {target}: {'met' if ratio <= target else 'NOT met'})" if target else ""
                print(f"{label + ':':<12} Read, audit off {off_us:7.1f} µs   audit on {on_us:7.1f} µs   "
                      f"ratio {ratio:.2f}{goal}; best of {rounds} alternating batches, median round {median:.2f}")
                report(Ratio(f"a Read with the audit on, {label} / audit off", ratio, target or 0,
                             bound="at most" if target else "info", low=min(per_round), high=max(per_round)))
        finally:
            from pegboard._services.store import dispose_all

            dispose_all()
            if pg is not None:
                admin, name = pg[1]
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
                admin.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()

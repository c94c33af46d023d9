"""Listings that page: ``pegboard sessions list`` and ``pegboard audit list``
as the store grows (issue 35, item 6).

    .venv/bin/python bench/bench_listing.py [--rounds N] [--no-postgres]

For each backend (SQLite; PostgreSQL at 127.0.0.1:5432 when it answers, in a
database of the bench's own, dropped after), three stores of each size:

* sessions list's page (the 50 most recently used, what each holds, how many
  more) with 100, 1,000 and 10,000 durable sessions;
* audit list with a filter that matches nothing (a tool never called) with
  1,000, 100,000 and 1,000,000 recorded decisions.

Each is the listing's own work (the query and the "how many more" count, as
the command runs them), timed in interleaved rounds, as a ratio to the
smallest size in the same round. Target: at most 1.5x at the largest (flat).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import from_rounds, report  # noqa: E402

PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"
SESSIONS = (100, 1_000, 10_000)
DECISIONS = (1_000, 100_000, 1_000_000)


def _store(tmp: Path, url: str) -> Any:
    from pegboard import Toolbox

    config = tmp / f"store-{uuid.uuid4().hex[:8]}.toml"
    config.write_text(f'[store]\nurl = "{url}"\n')
    return Toolbox.load(cwd=tmp, config=config, plugins=[])


def _fill_sessions(toolbox: Any, n: int) -> None:
    from pegboard._services.tables import scratchpad, sessions

    store = toolbox.plugins.stores("pegboard")
    with store.begin() as conn:
        conn.execute(sessions.insert(), [{"id": f"s{i:06d}", "parent_id": None, "root": "/project",
                                          "created_at": 1000.0 + i, "last_active": 2000.0 + i} for i in range(n)])
        conn.execute(scratchpad.insert(), [{"session_id": f"s{i:06d}", "name": "plan", "text": "step " * 20,
                                            "updated_at": 1.0} for i in range(n)])
    _analyze(store)


def _analyze(store: Any) -> None:
    """Statistics, as a database in use has them (PostgreSQL's autovacuum, SQLite's ANALYZE)."""
    from sqlalchemy import text

    with store.begin() as conn:
        conn.execute(text("ANALYZE"))


def _fill_decisions(toolbox: Any, n: int) -> None:
    from sqlalchemy import text

    from pegboard._services.tables import audit, ensure_indexes

    store = toolbox.plugins.stores("pegboard")
    ensure_indexes(store, audit)
    columns = ("at, session_id, tool, decision, reason, source, source_kind, mode, input_digest, input_preview, "
               "pid")
    values = ("1000000 + i, 's' || (i % 500), 'Read', 'allow', 'read inside the working directories', 'plugin fs', "
              "'plugin', 'default', 'digest', 'file_path=\"/project/src/a.py\"', 1")
    with store.begin() as conn:
        if store.backend == "sqlite":
            conn.execute(text(f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n}) "
                              f"INSERT INTO pegboard_audit ({columns}) SELECT {values} FROM c"))
        else:
            conn.execute(text(f"INSERT INTO pegboard_audit ({columns}) SELECT {values} "
                              f"FROM generate_series(1, {n}) AS i"))
    _analyze(store)


def _time(fn: Any, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(tmp: Path, url_for: Any, rounds: int, backend: str) -> list[Any]:
    from pegboard._services.audit import recorded_page
    from pegboard._cli.commands.sessions import MORE_CAP
    from pegboard._engine.session_records import SessionRecords

    listings = {}
    for n in SESSIONS:
        toolbox = _store(tmp, url_for(f"sessions{n}"))
        _fill_sessions(toolbox, n)
        records = SessionRecords(toolbox)
        rows, more = records.listing(50, MORE_CAP)
        assert len(rows) == min(n, 50) and more == max(n - 50, 0), (len(rows), more)
        listings[n] = lambda records=records: records.listing(50, MORE_CAP)
    empty_filters = {}
    for n in DECISIONS:
        toolbox = _store(tmp, url_for(f"audit{n}"))
        _fill_decisions(toolbox, n)
        store = toolbox.plugins.stores("pegboard")
        assert recorded_page(store, tool="NeverCalled", limit=100, more_cap=MORE_CAP) == ([], 0)
        empty_filters[n] = lambda store=store: recorded_page(store, tool="NeverCalled", limit=100, more_cap=MORE_CAP)
    reported = []
    for what, sizes, fns, unit in (("sessions list's page", SESSIONS, listings, "sessions"),
                                   ("audit list with a filter that matches nothing", DECISIONS, empty_filters,
                                    "decisions")):
        times: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(rounds):
            for n in sizes:
                times[n].append(_time(fns[n]))
        ratios = [t / base for t, base in zip(times[sizes[-1]], times[sizes[0]])]
        curve = ", ".join(f"{n:,} {unit}: {statistics.median(times[n]) * 1000:.2f} ms" for n in sizes)
        print(f"{backend}, {what}: {curve}")
        reported.append(from_rounds(f"{what}, {backend}, {sizes[-1]:,} {unit} / {sizes[0]:,}", ratios, 1.5,
                                    item="35.6", note=f"{backend}, {what}: {curve}"))
    return reported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-listing-"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ.setdefault(var, str(tmp / var.lower()))
    os.environ.setdefault("PEGBOARD_POLICY", str(tmp / "no-policy.toml"))
    reported = []
    try:
        reported += measure(tmp, lambda name: f"sqlite:///{tmp / name}.db", args.rounds, "SQLite")
        if not args.no_postgres:
            reported += _postgres(tmp, args.rounds)
    finally:
        from pegboard._services.store import dispose_all

        dispose_all()
        shutil.rmtree(tmp, ignore_errors=True)
    report(*reported)


def _postgres(tmp: Path, rounds: int) -> list[Any]:
    try:
        import psycopg

        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                                connect_timeout=5)
    except Exception as exc:  # no server here: SQLite's rows stand alone
        print(f"PostgreSQL not measured: {exc}")
        return []
    database = f"pegboard_bench_{os.getpid()}"
    with admin:
        admin.execute(f'CREATE DATABASE "{database}"')
        try:
            schemas: list[str] = []

            def url_for(name: str) -> str:
                schemas.append(name)
                with psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={database}",
                                     autocommit=True) as conn:
                    conn.execute(f'CREATE SCHEMA "{name}"')
                return f"{PG_SERVER}/{database}?options=-csearch_path%3D{name}"

            return measure(tmp, url_for, rounds, "PostgreSQL")
        finally:
            from pegboard._services.store import dispose_all

            dispose_all()
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')


if __name__ == "__main__":
    main()

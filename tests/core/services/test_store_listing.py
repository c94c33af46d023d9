"""``pegboard sessions list`` and ``pegboard audit list`` page (issue 35,
item 6): ``--limit``, newest first, a line saying how many more; an audit
filter that matches nothing is answered from an index, which a database
made before the index existed gets on first use (no schema version, so no
``pegboard store migrate``); on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pegboard import Toolbox
from pegboard._cli.main import cli

pytestmark = pytest.mark.slow  # many rules and rows, real stores

FILTERS = {
    "session": ["--session", "nosuch"],
    "tool": ["--tool", "NoTool"],
    "decision": ["--decision", "deny"],
    "since": ["--since", "1m"],
}


def run(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--cwd", str(tmp_path), *args], catch_exceptions=False)


def _store(tmp_path: Path) -> Any:
    return Toolbox.load(cwd=tmp_path, plugins=[]).plugins.stores("pegboard")


def _sessions(store: Any, n: int) -> None:
    from pegboard._services.tables import scratchpad, sessions

    with store.begin() as conn:
        conn.execute(sessions.insert(), [{"id": f"s{i:03d}", "parent_id": None, "root": "/r", "created_at": 1000.0,
                                          "last_active": 2000.0 + i} for i in range(n)])
        conn.execute(scratchpad.insert(), [{"session_id": f"s{i:03d}", "name": "note", "text": "x" * i,
                                            "updated_at": 1.0} for i in range(n)])


def _decisions(store: Any, n: int, decision: str = "allow", start: float = 1_000_000.0) -> None:
    from pegboard._services.tables import audit

    with store.begin() as conn:
        conn.execute(audit.insert(), [{
            "at": start + i, "session_id": f"s{i % 3}", "tool": "Read", "decision": decision, "reason": f"r{i}",
            "source": "plugin fs", "source_kind": "plugin", "mode": "default", "input_digest": "d" * 64,
            "input_preview": f"n={i}", "pid": 1} for i in range(n)])


def test_sessions_list_pages_newest_first(tmp_path: Path, store_url: str) -> None:
    _sessions(_store(tmp_path), 60)
    listed = run(tmp_path, "sessions", "list")
    assert listed.exit_code == 0, listed.output
    ids = [line.split()[0] for line in listed.output.splitlines() if line.startswith("s0")]
    assert ids == [f"s{i:03d}" for i in range(59, 9, -1)]  # 50 by default, the most recently used first
    assert listed.output.splitlines()[-1] == "... and 10 more sessions (--limit 60 shows them)"
    assert "s059" in listed.output and "scratchpad 1 entries (59 chars)" in listed.output
    five = run(tmp_path, "sessions", "list", "--limit", "5")
    assert [line.split()[0] for line in five.output.splitlines() if line.startswith("s0")] == \
        ["s059", "s058", "s057", "s056", "s055"]
    assert five.output.splitlines()[-1] == "... and 55 more sessions (--limit 60 shows them)"
    as_json = run(tmp_path, "sessions", "list", "--limit", "2", "--json")
    assert [row["id"] for row in json.loads(as_json.stdout)] == ["s059", "s058"]
    assert as_json.stderr.strip() == "... and 58 more sessions (--limit 60 shows them)"
    everything = run(tmp_path, "sessions", "list", "--limit", "60")
    assert "more sessions" not in everything.output
    assert run(tmp_path, "sessions", "list", "--limit", "0").exit_code == 2  # a page of nothing is a usage error


def test_audit_list_pages_newest_first(tmp_path: Path, store_url: str) -> None:
    store = _store(tmp_path)
    _decisions(store, 150)
    _decisions(store, 3, "deny", start=2_000_000.0)
    listed = run(tmp_path, "audit", "list")
    reasons = [line.split()[6] for line in listed.output.splitlines() if line.startswith(("19", "20"))]
    assert reasons[:4] == ["r2", "r1", "r0", "r149"] and len(reasons) == 100  # newest first, 100 by default
    assert listed.output.splitlines()[-1] == "... and 53 more decisions (--limit 153 shows them)"
    denied = run(tmp_path, "audit", "list", "--decision", "deny", "--json")
    assert [row["reason"] for row in json.loads(denied.stdout)] == ["r2", "r1", "r0"] and denied.stderr == ""
    two = run(tmp_path, "audit", "list", "--tool", "Read", "--limit", "2", "--json")
    assert [row["reason"] for row in json.loads(two.stdout)] == ["r2", "r1"]
    assert two.stderr.strip() == "... and 151 more decisions (--limit 153 shows them)"


def test_more_is_counted_no_further_than_the_cap(tmp_path: Path, store_url: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pegboard._cli.commands.audit.MORE_CAP", 20)
    monkeypatch.setattr("pegboard._cli.commands.sessions.MORE_CAP", 20)
    store = _store(tmp_path)
    _decisions(store, 50)
    _sessions(store, 60)
    assert run(tmp_path, "audit", "list", "--limit", "5").output.splitlines()[-1] == \
        "... and more than 20 more decisions (--limit 25 shows them)"
    assert run(tmp_path, "sessions", "list", "--limit", "5").output.splitlines()[-1] == \
        "... and more than 20 more sessions (--limit 25 shows them)"


@pytest.mark.parametrize("name", FILTERS)
def test_an_audit_filter_that_matches_nothing_is_answered_from_an_index(tmp_path: Path, store_url: str,
                                                                        name: str) -> None:
    """Asked of each backend's planner, with statistics of a log where the
    filter matches nothing: no scan of the whole table."""
    from sqlalchemy import select, text

    from pegboard._services.audit import _filters, newest_first
    from pegboard._services.tables import audit, ensure_indexes

    store = _store(tmp_path)
    ensure_indexes(store, audit)
    _decisions(store, 20_000, start=1_000.0)
    from pegboard._cli.commands.audit import parse_when

    values: dict[str, Any] = dict(zip(["session", "since", "tool", "decision"], [None] * 4))
    values[name] = parse_when(FILTERS[name][1]) if name == "since" else FILTERS[name][1]
    query = newest_first(select(audit), _filters(**values)).limit(100)
    with store.begin() as conn:
        conn.execute(text("ANALYZE pegboard_audit" if store.backend == "postgresql" else "ANALYZE"))
        sql = str(query.compile(conn, compile_kwargs={"literal_binds": True}))
        explain = "EXPLAIN QUERY PLAN " if store.backend == "sqlite" else "EXPLAIN "
        plan = "\n".join(str(tuple(row)[-1]) for row in conn.execute(text(explain + sql)))
        assert conn.execute(query).fetchall() == []
    if store.backend == "sqlite":
        assert "USING INDEX ix_pegboard_audit_" in plan and "SCAN pegboard_audit" not in plan, plan
    else:
        assert "Index Scan" in plan and "Seq Scan" not in plan, plan
    listed = run(tmp_path, "audit", "list", *FILTERS[name])
    assert listed.exit_code == 0 and listed.output.strip() == "no decisions recorded ([audit] enabled is false)"


def test_a_database_made_before_the_index_gets_it_on_first_use(tmp_path: Path, store_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """No schema version for an index: the database is not refused (no
    ``pegboard store migrate``), and ``audit list`` makes what it lacks."""
    from sqlalchemy import inspect, text

    from pegboard._services.tables import core_schema

    store = _store(tmp_path)
    _decisions(store, 10)  # the tables made as this code makes them, then the newest index taken away
    with store.begin() as conn:
        conn.execute(text("DROP INDEX ix_pegboard_audit_decision"))
    monkeypatch.setattr("pegboard._services.tables._INDEXED", set())  # a new process

    def indexes() -> set[str]:
        with store.begin(read_only=True) as conn:
            return {found["name"] for found in inspect(conn).get_indexes("pegboard_audit")}

    assert "ix_pegboard_audit_decision" not in indexes()
    listed = run(tmp_path, "audit", "list", "--decision", "allow", "--limit", "3")
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[-1] == "... and 7 more decisions (--limit 10 shows them)"
    assert "ix_pegboard_audit_decision" in indexes()
    assert store._store.versions() == {"pegboard": core_schema().version}  # no version was spent on it
    monkeypatch.setattr("pegboard._services.tables._INDEXED", set())
    assert run(tmp_path, "audit", "list", "--decision", "allow").exit_code == 0  # there already: nothing to do

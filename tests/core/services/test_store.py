"""The store: settings, plugins' own tables, schema versions and upgrades,
on SQLite and on the real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)
from pegboard import ConfigError, StoreError, Toolbox
from pegboard._cli.main import cli
from pegboard._services.store import dispose_all, redact_url
from pegboard._services.tables import core_schema

NOTES_V1 = '''
from pegboard import StoreSchema, Tool, hookimpl

def _tables():
    from sqlalchemy import Column, Integer, MetaData, String, Table, Text
    md = MetaData()
    notes = Table("{name}_notes", md,
                  Column("id", Integer, primary_key=True),
                  Column("session_id", String(64), nullable=False, index=True),
                  Column("text", Text, nullable=False))
    return md, notes

@hookimpl
def pegboard_store_schema():
    md, _ = _tables()
    return StoreSchema(metadata=md, version=1)
'''

NOTES_V2 = '''
from pegboard import StoreSchema, hookimpl

def _tables():
    from sqlalchemy import Column, Integer, MetaData, String, Table, Text
    md = MetaData()
    notes = Table("{name}_notes", md,
                  Column("id", Integer, primary_key=True),
                  Column("session_id", String(64), nullable=False, index=True),
                  Column("text", Text, nullable=False),
                  Column("label", String(40), nullable=False, server_default="none"))
    tags = Table("{name}_tags", md, Column("tag", String(40), primary_key=True))
    return md, notes

def add_label(conn):
    from sqlalchemy import text
    conn.execute(text("ALTER TABLE {name}_notes ADD COLUMN label VARCHAR(40) NOT NULL DEFAULT 'none'"))

@hookimpl
def pegboard_store_schema():
    md, _ = _tables()
    return StoreSchema(metadata=md, version=2, upgrades={{2: add_label}})
'''


def load(factory: PluginFactory, source: str, name: str = "notes") -> Toolbox:
    return factory(source.format(name=name), name=name)


def insert_note(toolbox: Toolbox, text: str, name: str = "notes") -> None:
    from sqlalchemy import MetaData, Table

    store = toolbox.context_for(name).store
    with store.begin() as conn:
        table = Table(f"{name}_notes", MetaData(), autoload_with=conn)
        conn.execute(table.insert().values(session_id="s1", text=text))


def notes(toolbox: Toolbox, name: str = "notes") -> list[dict[str, object]]:
    from sqlalchemy import MetaData, Table, select

    store = toolbox.context_for(name).store
    with store.begin(read_only=True) as conn:
        table = Table(f"{name}_notes", MetaData(), autoload_with=conn)
        return [dict(r._mapping) for r in conn.execute(select(table).order_by(table.c.id))]


def test_a_plugin_keeps_rows_in_its_own_tables(plugin_factory: PluginFactory, store_url: str) -> None:
    toolbox = load(plugin_factory, NOTES_V1)
    store = toolbox.context_for("notes").store
    assert store.backend == store_url.split(":")[0].split("+")[0]
    insert_note(toolbox, "first")
    assert [n["text"] for n in notes(toolbox)] == ["first"]
    assert toolbox.plugins.stores.store.versions() == {"notes": 1}


def test_a_database_from_an_earlier_version_is_upgraded(plugin_factory: PluginFactory, store_url: str) -> None:
    old = load(plugin_factory, NOTES_V1)
    insert_note(old, "kept across the upgrade")
    dispose_all()  # as a new process would: nothing known about the schema yet
    new = load(plugin_factory, NOTES_V2)
    new.context_for("notes").store.ready()  # what `pegboard store migrate` does; first use only refuses
    rows = notes(new)
    assert [(r["text"], r["label"]) for r in rows] == [("kept across the upgrade", "none")]
    store = new.plugins.stores.store
    assert store.versions()["notes"] == 2
    from sqlalchemy import inspect

    with store.begin(read_only=True) as conn:
        assert inspect(conn).has_table("notes_tags")  # new in version 2, created without a step


def test_a_database_newer_than_the_code_is_refused(plugin_factory: PluginFactory, store_url: str) -> None:
    insert_note(load(plugin_factory, NOTES_V2), "made by a newer pegboard")
    dispose_all()
    old = load(plugin_factory, NOTES_V1)
    with pytest.raises(StoreError, match=r"schema version 2, newer than this pegboard knows \(1\)"):
        notes(old)


def test_table_names_carry_the_plugin_prefix(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(NOTES_V1.format(name="other"), name="notes")
    with pytest.raises(StoreError, match=r"table 'other_notes' must be named notes_\.\.\."):
        toolbox.context_for("notes").store.ready()


def test_a_missing_upgrade_step_is_refused(plugin_factory: PluginFactory) -> None:
    toolbox = load(plugin_factory, NOTES_V2.replace("upgrades={{2: add_label}}", ""))
    with pytest.raises(StoreError, match="no upgrade step for version 2"):
        toolbox.context_for("notes").store.ready()


def test_async_code_runs_transactions_on_a_worker_thread(plugin_factory: PluginFactory, store_url: str) -> None:
    toolbox = load(plugin_factory, NOTES_V1)
    insert_note(toolbox, "one")
    store = toolbox.context_for("notes").store

    def count(conn: object) -> tuple[int, str]:
        import threading

        from sqlalchemy import text

        return conn.execute(text("SELECT count(*) FROM notes_notes")).scalar(), threading.current_thread().name  # type: ignore[attr-defined]

    found, thread = asyncio.run(store.run(count, read_only=True))
    assert found == 1
    assert thread != "MainThread"


def test_sqlite_default_is_a_wal_file_in_the_data_dir(plugin_factory: PluginFactory, isolated_env: Path) -> None:
    toolbox = load(plugin_factory, NOTES_V1)
    insert_note(toolbox, "x")
    path = isolated_env / "data" / "pegboard" / "pegboard.db"
    assert path.is_file()
    store = toolbox.context_for("notes").store
    from sqlalchemy import text

    with store.begin(read_only=True) as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() >= 10_000


def test_the_store_url_is_user_scope(plugin_factory: PluginFactory) -> None:
    # Even from a trusted project (PluginFactory.config trusts it): the value is
    # taken from the person's own layers, and the project's setting is reported.
    config = plugin_factory.config('[store]\nurl = "sqlite:////tmp/elsewhere.db"\n[audit]\nenabled = false\n')
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=[])
    assert toolbox.settings.core.store.url is None
    messages = [i.describe() for i in toolbox.settings.ignored]
    assert any(m.startswith(f"{config}: [store] url: ignored (only your own config") for m in messages), messages
    assert any(m.startswith(f"{config}: [audit] enabled: ignored") for m in messages), messages


def test_a_postgres_url_without_driver_uses_psycopg() -> None:
    from pegboard._services.store import Store

    assert Store("postgresql://u@h/db").url == "postgresql+psycopg://u@h/db"
    assert Store("postgres://u@h/db").backend == "postgresql"


def test_passwords_are_redacted() -> None:
    assert redact_url("postgresql+psycopg://bob:s3cr%40t@db:5432/x") == "postgresql+psycopg://bob:***@db:5432/x"
    assert redact_url("postgresql://db/x?user=bob&password=s3cret&sslmode=require") == \
        "postgresql://db/x?user=bob&password=***&sslmode=require"
    assert redact_url("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"


def run_cli(*args: str, cwd: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--cwd", str(cwd), *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_store_info_and_migrate_never_show_the_password(
        postgres_database: str, user_config: Callable[[str], Path], tmp_path: Path) -> None:
    url = postgres_database.replace("postgres@", "postgres:hunter2@")  # trust auth ignores it
    user_config(f'[store]\nurl = "{url}"\n')
    outputs = []
    code, out = run_cli("store", "migrate", cwd=tmp_path)
    outputs.append(out)
    assert code == 0, out
    core = core_schema().version  # the core's tables grow (3: pending calls); the test need not follow
    assert f"pegboard     version {core}  created" in out
    code, out = run_cli("store", "info", cwd=tmp_path)
    outputs.append(out)
    assert code == 0, out
    assert "postgres:***@127.0.0.1" in out and "backend  postgresql" in out
    assert f"schema   pegboard     database {core}    code {core}    current" in out
    code, out = run_cli("doctor", cwd=tmp_path)
    outputs.append(out)
    assert "OK    store: postgresql+psycopg://postgres:***@" in out and "every schema current" in out
    code, out = run_cli("store", "info", "--json", cwd=tmp_path)
    outputs.append(out)
    assert json.loads(out)["components"][0] == {"component": "pegboard", "database": core, "code": core,
                                                 "state": "current"}
    for text in outputs:  # migrate, info, doctor and info --json alike
        assert "hunter2" not in text, text


def test_an_unreachable_store_fails_doctor_with_the_url_redacted(
        user_config: Callable[[str], Path], tmp_path: Path) -> None:
    user_config('[store]\nurl = "postgresql+psycopg://postgres:hunter2@127.0.0.1:1/nowhere"\n')
    code, out = run_cli("doctor", cwd=tmp_path)
    assert code == 1
    line = next(l for l in out.splitlines() if l.startswith("FAIL  store"))
    assert "postgres:***@127.0.0.1:1/nowhere" in line and "OperationalError" in line
    assert "hunter2" not in out


@pytest.mark.slow
def test_doctor_says_when_a_schema_needs_an_upgrade(plugin_factory: PluginFactory, store_url: str) -> None:
    insert_note(load(plugin_factory, NOTES_V1), "old")
    dispose_all()
    plugin_factory.write(NOTES_V2.format(name="notes"), name="notes")
    code, out = run_cli("doctor", cwd=plugin_factory.root)
    assert "FAIL  store schema notes: database 1, code 2: needs upgrade to 2" in out
    code, out = run_cli("store", "migrate", cwd=plugin_factory.root)
    assert code == 0 and "notes        version 2  upgraded from 1" in out


@pytest.mark.slow
def test_listing_and_a_plain_call_never_import_sqlalchemy(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    script = f"""
import asyncio, sys
from pegboard import Toolbox
toolbox = Toolbox.load(cwd={str(tmp_path)!r})
toolbox.tool_statuses()
result = asyncio.run(toolbox.session().call("Read", {{"file_path": {str(tmp_path / 'a.txt')!r}}}))
assert "hello" in result.text_content(), result
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "psycopg")
             or m in ("pegboard._services.store", "pegboard._services.audit", "pegboard._engine.session_records")))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

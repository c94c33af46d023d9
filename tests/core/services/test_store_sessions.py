"""Sessions that last: resumed from another process, listed, expired and
deleted with what plugins kept for them, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)
from pegboard import Toolbox
from pegboard._cli.main import cli
from pegboard._services.store import dispose_all

PEGBOARD = str(Path(sys.executable).parent / "pegboard")

KEEPER = '''
from pathlib import Path
from pegboard import StoreSchema, Tool, hookimpl
from pydantic import BaseModel

class KeepIn(BaseModel):
    text: str

def _tables():
    from sqlalchemy import Column, Integer, MetaData, String, Table, Text
    md = MetaData()
    Table("keeper_items", md, Column("id", Integer, primary_key=True),
          Column("session_id", String(64), nullable=False, index=True), Column("text", Text))
    Table("keeper_settings", md, Column("key", String(40), primary_key=True), Column("value", Text))
    return md

async def keep(args, ctx):
    from sqlalchemy import column, insert, table
    items = table("keeper_items", column("session_id"), column("text"))
    await ctx.store.run(lambda conn: conn.execute(insert(items).values(session_id=ctx.session.id, text=args.text)))
    return "kept"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Keep", handler=keep, input_model=KeepIn, read_only=True, permission="read"))

@hookimpl
def pegboard_store_schema():
    return StoreSchema(metadata=_tables(), version=1)

@hookimpl
def pegboard_session_deleted(session_id, context):
    log = context.data_dir / "deleted.txt"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as fh:
        fh.write(session_id + "\\n")
'''


def keeper(factory: PluginFactory) -> Toolbox:
    return factory(KEEPER, name="keeper")


def rows(toolbox: Toolbox, sql: str) -> list[tuple[object, ...]]:
    from sqlalchemy import text

    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


async def keep_in(toolbox: Toolbox, session_id: str, text: str) -> None:
    async with toolbox.session(session_id=session_id) as session:
        result = await session.call("Keep", {"text": text})
        assert result.text_content() == "kept", result


@pytest.mark.slow
def test_a_session_resumes_its_scratchpad_from_another_process(store_url: str, tmp_path: Path,
                                                               isolated_env: Path) -> None:
    (tmp_path / "a.txt").write_text("remembered line\n")
    env = {**os.environ}  # the test's XDG_* folders, hence its store
    first = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "call", "Read", "--session", "conv-1", "--input",
                            json.dumps({"file_path": str(tmp_path / "a.txt"), "scratchpad": "notes"})],
                           capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert "Saved" in first.stdout
    second = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "call", "ScratchpadRead", "--session", "conv-1",
                             "--input", '{"name": "notes"}'], capture_output=True, text=True, env=env)
    assert second.returncode == 0, second.stderr
    assert "remembered line" in second.stdout
    fresh = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "call", "ScratchpadRead", "--session", "conv-2",
                            "--input", '{"name": "notes"}'], capture_output=True, text=True, env=env)
    assert fresh.returncode == 1 and "No scratchpad entry 'notes'" in fresh.stdout
    listed = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "sessions", "list", "--json"], capture_output=True,
                            text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    by_id = {r["id"]: r for r in json.loads(listed.stdout)}
    pad = by_id["conv-1"]["scratchpad"]
    assert pad["entries"] == 1 and pad["chars"] >= len("remembered line"), by_id["conv-1"]
    table = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "sessions", "list"], capture_output=True, text=True,
                           env=env).stdout
    assert "conv-1" in table and "scratchpad 1 entries" in table, table


def test_what_lasts_and_what_does_not(plugin_factory: PluginFactory, store_url: str) -> None:
    toolbox = keeper(plugin_factory)
    first = toolbox.session(session_id="s-1", parent_id="p-0")
    assert first.durable and not first.resumed
    first.scratchpad["plan"] = "step one"
    first.grant("Keep")
    first.loaded.add("Keep")
    asyncio.run(first.aclose())
    dispose_all()
    again = keeper(plugin_factory).session(session_id="s-1")
    assert again.resumed
    assert dict(again.scratchpad) == {"plan": "step one"}
    assert again.grants() == [] and again.loaded == set()
    assert rows(toolbox, "SELECT id, parent_id FROM pegboard_sessions") == [("s-1", "p-0")]
    del again.scratchpad["plan"]
    assert rows(toolbox, "SELECT count(*) FROM pegboard_scratchpad") == [(0,)]


def test_a_session_without_an_id_keeps_nothing(plugin_factory: PluginFactory, isolated_env: Path) -> None:
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=[])
    session = toolbox.session()
    session.scratchpad["x"] = "y"
    asyncio.run(session.aclose())
    assert not session.durable
    assert not (isolated_env / "data" / "pegboard" / "pegboard.db").exists()


def test_session_ids_are_checked(plugin_factory: PluginFactory) -> None:
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=[])
    for bad in ("../up", "", "a/b", "x" * 65, "-flag"):
        with pytest.raises(ValueError, match="is not a session id"):
            toolbox.session(session_id=bad)
    result = CliRunner().invoke(cli, ["--cwd", str(plugin_factory.root), "call", "Read", "--session", "a/b"])
    assert result.exit_code == 2 and "--session: 'a/b' is not a session id" in result.output


def test_deleting_a_session_deletes_what_plugins_kept(plugin_factory: PluginFactory, store_url: str,
                                                      isolated_env: Path) -> None:
    toolbox = keeper(plugin_factory)
    asyncio.run(keep_in(toolbox, "gone", "a"))
    asyncio.run(keep_in(toolbox, "gone", "b"))
    asyncio.run(keep_in(toolbox, "stays", "c"))
    folder = isolated_env / "data" / "pegboard" / "sessions" / "gone"
    folder.mkdir(parents=True)
    (folder / "spilled.txt").write_text("x")
    from sqlalchemy import text

    with toolbox.plugins.stores("keeper").begin() as conn:
        conn.execute(text("INSERT INTO keeper_settings VALUES ('k', 'v')"))
    result = CliRunner().invoke(cli, ["--cwd", str(plugin_factory.root), "sessions", "list", "--json"])
    listed = {r["id"]: r for r in json.loads(result.output)}
    assert listed["gone"]["plugin_rows"] == {"keeper_items": 2}
    result = CliRunner().invoke(cli, ["--cwd", str(plugin_factory.root), "sessions", "delete", "gone", "nope"])
    assert "deleted gone" in result.output and "no durable session nope" in result.output
    assert result.exit_code == 1  # one id named no session
    assert rows(toolbox, "SELECT session_id, text FROM keeper_items") == [("stays", "c")]
    assert rows(toolbox, "SELECT key FROM keeper_settings") == [("k",)]  # not keyed by session: kept
    assert [r[0] for r in rows(toolbox, "SELECT id FROM pegboard_sessions")] == ["stays"]
    assert not folder.exists()
    assert (isolated_env / "data" / "pegboard" / "deleted.txt").read_text() == "gone\nnope\n"


def test_a_disabled_plugins_rows_go_with_the_session(plugin_factory: PluginFactory, store_url: str,
                                                     user_config: object) -> None:
    toolbox = keeper(plugin_factory)
    asyncio.run(keep_in(toolbox, "s", "a"))
    dispose_all()
    user_config("[plugins.keeper]\nenabled = false\n")  # type: ignore[operator]
    off = Toolbox.load(cwd=plugin_factory.root, plugins=["keeper"])
    from pegboard._engine.session_records import SessionRecords

    assert SessionRecords(off).delete(["s"]) == (["s"], [])
    assert rows(off, "SELECT count(*) FROM keeper_items") == [(0,)]


def test_sessions_expire_by_age(plugin_factory: PluginFactory, store_url: str, user_config: object) -> None:
    user_config("session_max_age_days = 7\n")  # type: ignore[operator]  (appended to the [store] table)
    toolbox = keeper(plugin_factory)
    asyncio.run(keep_in(toolbox, "old", "a"))
    asyncio.run(keep_in(toolbox, "new", "b"))
    from sqlalchemy import text

    with toolbox.plugins.stores("pegboard").begin() as conn:
        conn.execute(text("UPDATE pegboard_sessions SET last_active = :t WHERE id = 'old'"),
                     {"t": time.time() - 8 * 86400})
    result = CliRunner().invoke(cli, ["--cwd", str(plugin_factory.root), "sessions", "prune"])
    assert result.exit_code == 0, result.output
    assert "deleted 1 sessions unused for more than 7 days: old" in result.output
    assert rows(toolbox, "SELECT session_id FROM keeper_items") == [("new",)]


def test_sessions_list_on_an_empty_store(plugin_factory: PluginFactory, store_url: str) -> None:
    result = CliRunner().invoke(cli, ["--cwd", str(plugin_factory.root), "sessions", "list"])
    assert result.exit_code == 0 and "no durable sessions" in result.output

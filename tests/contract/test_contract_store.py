"""Issue 33, item 1 and 3: a plugin's schema upgrade tried in one process,
through the kit (``pegboard_upgrade``), on SQLite and PostgreSQL: the store
knows each component's version in the process and in the database, a read
never migrates, a database behind the code is refused naming ``pegboard
store migrate`` and reported by doctor."""

from __future__ import annotations

import types
from typing import Any

import pytest

from pegboard import StoreError, StoreSchema, Tool, ToolResult, hookimpl
from pegboard.testing import CLIRunner, Project, StoreUpgrade, call


def notes_plugin(version: int) -> types.SimpleNamespace:
    """Version 1: notes with a text; version 2 adds a label (an ALTER TABLE step)."""

    def tables() -> Any:
        from sqlalchemy import Column, Integer, MetaData, String, Table, Text

        metadata = MetaData()
        columns = [Column("id", Integer, primary_key=True), Column("text", Text, nullable=False)]
        if version >= 2:
            columns.append(Column("label", String(40), nullable=False, server_default="none"))
        return metadata, Table("notes_items", metadata, *columns)

    def add_label(conn: Any) -> None:
        from sqlalchemy import text

        conn.execute(text("ALTER TABLE notes_items ADD COLUMN label VARCHAR(40) NOT NULL DEFAULT 'none'"))

    async def list_notes(args: dict[str, Any], ctx: Any) -> ToolResult | str:
        _, items = tables()
        from sqlalchemy import select

        def read(conn: Any) -> list[str]:
            columns = [items.c.text, items.c.label] if version >= 2 else [items.c.text]
            return [" ".join(row) for row in conn.execute(select(*columns).order_by(items.c.id))]

        return ", ".join(await ctx.store.run(read, read_only=True)) or "no notes"

    @hookimpl
    def pegboard_store_schema() -> StoreSchema:
        return StoreSchema(metadata=tables()[0], version=version, upgrades={2: add_label} if version >= 2 else {})

    @hookimpl
    def pegboard_register_tools(register: Any) -> None:
        register(Tool(name="NotesList", handler=list_notes, input_schema={"type": "object", "properties": {}},
                      read_only=True, permission="read", description="Lists the notes."))

    return types.SimpleNamespace(pegboard_store_schema=pegboard_store_schema,
                                 pegboard_register_tools=pegboard_register_tools)


def add_note(toolbox: Any, text: str) -> None:
    from sqlalchemy import column, insert, table

    with toolbox.context_for("notes").store.begin() as conn:
        conn.execute(insert(table("notes_items", column("text"))).values(text=text))


@pytest.fixture(autouse=True)
def _on_each_backend(store_url: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (a schema of its own)."""
    return store_url


@pytest.mark.slow
def test_a_second_toolbox_with_a_newer_plugin_is_upgraded_in_the_same_process(
        pegboard_upgrade: StoreUpgrade) -> None:
    old = pegboard_upgrade.old({"notes": notes_plugin(1)})
    add_note(old, "kept")
    assert call(old, "NotesList").text_content() == "kept"
    assert pegboard_upgrade.versions(old)["notes"] == 1
    new = pegboard_upgrade.new({"notes": notes_plugin(2)})
    assert pegboard_upgrade.versions(new)["notes"] == 2
    assert call(new, "NotesList").text_content() == "kept none"


def test_a_database_behind_the_code_is_refused_for_reads_and_writes_never_migrated(
        pegboard_upgrade: StoreUpgrade) -> None:
    old = pegboard_upgrade.old({"notes": notes_plugin(1)})
    add_note(old, "kept")
    new = pegboard_upgrade.new({"notes": notes_plugin(2)}, migrate=False)
    store = new.context_for("notes").store
    with pytest.raises(StoreError, match=r"notes tables are at schema version 1, behind this code's 2: "
                                         r"run `pegboard store migrate`"):
        with store.begin(read_only=True):
            pass
    with pytest.raises(StoreError, match=r"run `pegboard store migrate`"):
        add_note(new, "refused")
    result = call(new, "NotesList")
    assert result.is_error and "pegboard store migrate" in result.text_content()
    assert pegboard_upgrade.versions(new)["notes"] == 1  # neither the read nor the write upgraded it


def test_store_info_doctor_and_migrate_agree_in_one_process(pegboard_upgrade: StoreUpgrade,
                                                            pegboard_project: Project) -> None:
    pegboard_upgrade.old({"notes": notes_plugin(1)})
    cli = CLIRunner(pegboard_project.root, {"notes": notes_plugin(2)})
    info = cli("store", "info")
    assert "notes        database 1    code 2    needs upgrade to 2: run `pegboard store migrate`" in info.stdout
    doctor = cli("doctor")
    assert doctor.exit_code == 1
    assert "FAIL  store schema notes: database 1, code 2: needs upgrade to 2" in doctor.stdout
    migrated = cli("store", "migrate")
    assert migrated.exit_code == 0, migrated.output
    assert "notes        version 2  upgraded from 1" in migrated.stdout
    assert "notes        database 2    code 2    current" in cli("store", "info").stdout


def test_a_database_newer_than_the_code_is_refused(pegboard_upgrade: StoreUpgrade) -> None:
    pegboard_upgrade.old({"notes": notes_plugin(2)})
    older = pegboard_upgrade.load(plugins={"notes": notes_plugin(1)})
    with pytest.raises(StoreError, match=r"schema version 2, newer than this pegboard knows \(1\)"):
        pegboard_upgrade.migrate(older)

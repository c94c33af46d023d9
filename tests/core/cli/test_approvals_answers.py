"""Who answered and who asked: an answer keeps its approver (the terminal's
user for ``pegboard approvals``, the page's for ``approvals serve``), the
audit log names them, and a pending call keeps its requester."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from _approval_host import LaterHost
from click.testing import CliRunner

from pegboard import Answer, Toolbox
from pegboard._cli.main import cli
from pegboard._services.pending import local_user

pytestmark = pytest.mark.anyio


def _audit_on() -> None:
    from pegboard.paths import config_dir

    config = config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[audit]\nenabled = true\n")


@pytest.mark.slow
async def test_the_terminal_answer_keeps_the_local_user_and_the_audit_names_them(tmp_path: Path) -> None:
    from pegboard._services.audit import flush_all, recorded

    _audit_on()
    project = tmp_path / "project"
    project.mkdir()
    toolbox = Toolbox.load(cwd=project, plugins=["fs"], host=LaterHost())
    assert toolbox.settings.core.audit.enabled
    session = toolbox.session("default", session_id="conv-7")
    await session.call("Write", {"file_path": str(project / "out.txt"), "content": "x"})
    [call] = session.pending.list()
    assert call.requester == local_user()
    result = CliRunner().invoke(cli, ["approvals", "approve", call.id, "--cwd", str(project)],
                                env={"PEGBOARD_PLUGINS": "fs"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [answered] = toolbox.pending_calls()
    assert answered.answer is not None and answered.answer.approver == local_user()
    # The host settles it with the answer as it was given (who gave it is not part of the decision).
    ran = await session.pending.resolve(call.id, Answer(allow=True))
    assert not ran.is_error, ran.text_content()
    flush_all()
    rows = recorded(toolbox.plugins.stores("pegboard"), session="conv-7")
    assert [(r["decision"], r["answer"]) for r in rows][-1] == ("allow", "once")
    assert rows[-1]["host"] == f"given with the call, by {local_user()}"
    [settled] = [c for c in _recent(toolbox) if c.id == call.id]
    assert settled.status == "done" and settled.answer is not None and settled.answer.approver == local_user()


def _recent(toolbox: Toolbox) -> list[Any]:
    from pegboard._services.pending import recently_answered

    return recently_answered(toolbox)


async def test_a_child_session_asks_for_its_parents_requester(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs"], host=LaterHost())
    parent = toolbox.session("default", session_id="top")
    parent.requester = "client-42"
    child = parent.child(label="helper", session_id="top-kid")
    await child.call("Write", {"file_path": str(tmp_path / "k.txt"), "content": "k"})
    [call] = toolbox.pending_calls("top-kid")
    assert call.requester == "client-42"
    from pegboard._services.pending import list_pending

    assert [c.id for c in list_pending(toolbox, requester="client-42")] == [call.id]
    assert list_pending(toolbox, requester="someone-else") == []


def test_a_store_from_before_the_requester_gains_the_column_on_first_use(tmp_path: Path, store_url: str) -> None:
    """The core's tables at version 3 kept pending calls without a requester:
    the first use adds the column and keeps the rows, with no `pegboard store
    migrate` and no new version (older code keeps working on the database)."""
    import sqlalchemy as sa

    from pegboard._services.store import SCHEMA_TABLE
    from pegboard._services.tables import core_schema, metadata, pending

    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs"])
    engine = toolbox.plugins.stores.store.engine
    old = sa.MetaData()
    for table in metadata.sorted_tables:
        columns = [sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                   for c in table.columns if not (table is pending and c.name == "requester")]
        sa.Table(table.name, old, *columns)
    with engine.begin() as conn:
        old.create_all(conn)
        conn.execute(sa.text(f"CREATE TABLE {SCHEMA_TABLE} (component VARCHAR(100) PRIMARY KEY, "
                             "version INTEGER NOT NULL, updated_at FLOAT NOT NULL)"))
        conn.execute(sa.text(f"INSERT INTO {SCHEMA_TABLE} VALUES ('pegboard', 3, 0)"))
        conn.execute(old.tables["pegboard_pending"].insert().values(
            id="p-0123456789ab", session_id="old", call_id="c1", tool="Write", input=json.dumps({"content": "x"}),
            reason="r", source="plugin fs", suggestions="[]", status="pending", answer=None, created_at=time.time(),
            resolved_at=None))
    [call] = toolbox.pending_calls()
    assert (call.id, call.requester) == ("p-0123456789ab", None)
    assert toolbox.plugins.stores.store.versions()["pegboard"] == core_schema().version == 3
    with engine.begin() as conn:
        assert "requester" in {c["name"] for c in sa.inspect(conn).get_columns("pegboard_pending")}

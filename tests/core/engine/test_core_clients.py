"""Clients: a host serving several people names the client of each session;
``[clients.<id>]`` sets its mode and rules, its credential's level is a
ceiling, votes see it (``request.client``), and the audit log records it
(a column added to an older table on first use, no version step)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pegboard import Client, ConfigError, PermissionRequest, Toolbox, Vote, hookimpl


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def decision(session: Any, tool: str, input: dict[str, Any]) -> tuple[str, str]:
    found = asyncio.run(session.decide(tool, input))
    return found.decision, found.source


def test_per_client_rules_differ_in_one_toolbox(project: Path, user_config: Callable[[str], Path]) -> None:
    config = user_config('[clients.alice]\nallow = ["Write"]\n[clients.bob]\ndeny = ["Read"]\n')
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    alice = toolbox.session(client=Client("alice", via="api key"))
    bob = toolbox.session(client=Client("bob"))
    nobody = toolbox.session()
    write = {"file_path": str(project / "b.txt"), "content": "x"}
    read = {"file_path": str(project / "a.txt")}
    assert decision(alice, "Write", write) == ("allow", f"rule Write in [clients.alice] of {config}")
    assert decision(bob, "Write", write)[0] == "ask"
    assert decision(nobody, "Write", write)[0] == "ask"
    assert decision(bob, "Read", read) == ("deny", f"rule Read in [clients.bob] of {config}")
    assert decision(alice, "Read", read)[0] == "allow"
    assert decision(nobody, "Read", read)[0] == "allow"
    # a sub-agent's session is its parent's client's, under the same rules
    kid = bob.child(label="helper")
    assert kid.client == bob.client and decision(kid, "Read", read)[0] == "deny"


def test_a_clients_mode_starts_its_sessions_and_bounds_them(project: Path,
                                                           user_config: Callable[[str], Path]) -> None:
    user_config('[clients.carol]\nmode = "plan"\n')
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    carol = toolbox.session("acceptEdits", client=Client("carol"))
    assert carol.mode == "plan"
    carol.set_mode("bypassPermissions")  # wider than her [clients] mode: she stays where she was allowed
    assert carol.mode == "plan"
    assert toolbox.session("acceptEdits", client=Client("dan")).mode == "acceptEdits"  # no table: the host's


def test_the_level_a_credential_allows_is_a_ceiling(project: Path) -> None:
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    reader = toolbox.session("bypassPermissions", client=Client("eve", via="oauth", level="read",
                                                                scopes=("pegboard:read",)))
    assert reader.mode == "read"
    assert decision(reader, "Read", {"file_path": str(project / "a.txt")})[0] == "allow"
    denied, source = decision(reader, "Write", {"file_path": str(project / "b.txt"), "content": "x"})
    assert (denied, source) == ("deny", "level read")
    assert "Write" not in [t.name for t in reader.offered()]


def test_votes_see_the_client(project: Path) -> None:
    seen: list[Client | None] = []

    class Watcher:
        @hookimpl
        def pegboard_permission(self, request: PermissionRequest) -> Vote | None:
            seen.append(request.client)
            if request.client is not None and request.client.id == "mallory":
                return Vote.deny("mallory may not read")
            return None

    toolbox = Toolbox.load(cwd=project, plugins=["fs"], extra_plugins={"watcher": Watcher()})
    read = {"file_path": str(project / "a.txt")}
    assert decision(toolbox.session(client=Client("mallory")), "Read", read) == ("deny", "plugin watcher")
    assert decision(toolbox.session(client=Client("trent")), "Read", read)[0] == "allow"
    assert [c.id if c else None for c in seen] == ["mallory", "trent"]


def test_clients_are_the_operators_to_set(project: Path, user_config: Callable[[str], Path],
                                         trust_project: Callable[[Path], Path]) -> None:
    (project / ".pegboard").mkdir()
    (project / ".pegboard" / "config.toml").write_text('[clients.mallory]\nmode = "acceptEdits"\nallow = ["Write"]\n')
    trust_project(project)
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    mallory = toolbox.session(client=Client("mallory"))
    assert mallory.mode == "default"
    assert decision(mallory, "Write", {"file_path": str(project / "b.txt"), "content": "x"})[0] == "ask"
    assert any(i.kind == "user scope" and "clients" in i.what for i in toolbox.settings.ignored)

    config = user_config('[clients.alice]\ndeny = ["Read("]\n')
    with pytest.raises(ConfigError) as bad:
        Toolbox.load(cwd=project, plugins=["fs"])
    assert f"{config}: [clients.alice] deny: rule 'Read('" in str(bad.value)


def test_a_client_id_is_checked() -> None:
    for bad in ("", "   ", "x" * 201):
        with pytest.raises(ValueError):
            Client(bad)
    with pytest.raises(ValueError):
        Client("alice", level="admin")  # type: ignore[arg-type]


def audit_rows(toolbox: Toolbox) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from pegboard._services.audit import flush_all
    from pegboard._services.tables import audit

    flush_all()
    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        return [dict(r._mapping) for r in conn.execute(select(audit).order_by(audit.c.id))]


def test_the_audit_records_the_client_and_gains_the_column_on_first_use(
        project: Path, store_url: str, user_config: Callable[[str], Path]) -> None:
    """A database whose audit table predates the column keeps its version and
    its rows: the column is added the first time this pegboard uses it."""
    import sqlalchemy as sa

    from pegboard._services.store import SCHEMA_TABLE
    from pegboard._services.tables import audit, core_schema

    user_config("\n[audit]\nenabled = true\n")
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    engine = toolbox.plugins.stores.store.engine
    version = core_schema().version
    toolbox.plugins.stores("pegboard").ready()
    with engine.begin() as conn:  # as a pegboard before the column left it
        conn.execute(sa.text("DROP TABLE pegboard_audit"))
        old = sa.Table("pegboard_audit", sa.MetaData(),
                       *[sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                         for c in audit.columns if c.name != "client"])
        old.create(conn)
        conn.execute(old.insert().values(at=time.time(), session_id="before", tool="Read", decision="allow", reason="r",
                                         source="plugin fs", source_kind="plugin", mode="default",
                                         input_digest="0" * 64, input_preview="", pid=1))
    from pegboard._services.store import dispose_all

    dispose_all()  # a new process: it has not seen the database yet
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        async with toolbox.session(session_id="s1", client=Client("alice")) as session:
            await session.call("Read", {"file_path": str(project / "a.txt")})
        async with toolbox.session(session_id="s2") as session:
            await session.call("Read", {"file_path": str(project / "a.txt")})

    asyncio.run(calls())
    rows = audit_rows(toolbox)
    assert [(r["session_id"], r["client"]) for r in rows] == [("before", None), ("s1", "alice"), ("s2", None)]
    assert toolbox.plugins.stores.store.versions()["pegboard"] == version
    with engine.connect() as conn:
        assert conn.execute(sa.text(f"SELECT version FROM {SCHEMA_TABLE} WHERE component = 'pegboard'")).scalar() \
            == version


def test_an_operator_checks_and_reads_a_clients_decisions(project: Path, store_url: str,
                                                          user_config: Callable[[str], Path]) -> None:
    """``permissions check --client`` decides as for that client; ``audit list --client`` shows its rows."""
    import json

    from click.testing import CliRunner

    from pegboard._cli.main import cli

    user_config('\n[audit]\nenabled = true\n[clients.alice]\ndeny = ["Read"]\n')
    read = json.dumps({"file_path": str(project / "a.txt")})
    run = lambda *a: CliRunner().invoke(cli, ["--cwd", str(project), *a])  # noqa: E731
    checked = run("permissions", "check", "Read", "--input", read, "--client", "alice")
    assert checked.exit_code == 1 and "[clients.alice]" in checked.output, checked.output
    assert run("permissions", "check", "Read", "--input", read, "--client", "bob").exit_code == 0
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        for who in ("alice", "bob"):
            async with toolbox.session(session_id=f"s-{who}", client=Client(who)) as session:
                await session.call("Read", {"file_path": str(project / "a.txt")})

    asyncio.run(calls())
    audit_rows(toolbox)  # flushed
    listed = json.loads(run("audit", "list", "--client", "alice", "--json").output)
    assert [(r["client"], r["decision"]) for r in listed] == [("alice", "deny")]
    assert "client bob; source" in run("audit", "list", "--client", "bob").output

"""The audit log: every decision recorded with its source and the person's
answer, inputs redacted, never in a call's way, nothing lost across
processes; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pegboard import Answer, Toolbox, hookimpl
from pegboard._services.audit import flush_all, preview, redact
from pegboard._cli.main import cli
from pegboard._services.tables import core_schema

PEGBOARD = str(Path(sys.executable).parent / "pegboard")


# --- redaction -----------------------------------------------------------------------


@pytest.mark.parametrize("text, secret", [
    ("curl -H 'Authorization: Bearer abc.def.ghi123' https://x", "abc.def.ghi123"),
    ("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"),
    ("git clone https://bob:hunter2@example.com/repo.git", "hunter2"),
    ("mysql --password hunter2 -u root", "hunter2"),
    ("psql 'postgresql://app:s3cret@db/x?sslmode=require'", "s3cret"),
    ('curl -d \'{"api_key": "k-12345678"}\' https://x', "k-12345678"),
    ("OPENAI_API_KEY=sk-proj-AAAAAAAAAAAAAAAAAAAA python run.py", "sk-proj-AAAA"),
    ("aws s3 ls --profile x # AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
    ("echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl", "eyJhbGciOiJIUzI1NiJ9"),
    ("wget https://x/file?token=abcdef123&x=1", "abcdef123"),
    ("echo 'Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTBhYmNk' > key", "Zm9vYmFyYmF6cXV4"),
    ("cat <<EOF\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----\nEOF", "b3BlbnNzaA"),
])
def test_redaction_removes_secrets(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned, cleaned
    assert "***" in cleaned or "[private key]" in cleaned


def test_redaction_keeps_ordinary_commands() -> None:
    for text in ("git log --oneline -5", "pytest -q tests/core/services/test_store.py", "ls -la /tmp/build-2026",
                 "grep -rn 'token' src/"):
        assert redact(text) == text


def test_preview_keeps_paths_and_clips_the_rest() -> None:
    long_path = "/home/me/" + "d" * 300 + "/api_key=plain.txt"
    shown = preview({"file_path": long_path, "content": "x" * 500, "limit": 3}, 10_000)
    assert f'file_path="{long_path}"' in shown  # a path is kept whole, never redacted
    assert "x" * 120 + "…(+380 chars)" in shown and "limit=3" in shown
    assert len(preview({"command": "y" * 1000}, 200)) < 230
    assert preview({"command": "ls"}, 0) == ""


# --- recording decisions -----------------------------------------------------------------


class Person:
    """A host that answers asks from a script."""

    def __init__(self, *answers: Answer):
        self.answers = list(answers)

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return self.answers.pop(0)


def audit_rows(toolbox: Toolbox) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from pegboard._services.tables import audit

    flush_all()
    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        return [dict(r._mapping) for r in conn.execute(select(audit).order_by(audit.c.id))]


@pytest.fixture
def project(tmp_path: Path, store_url: str, user_config: Callable[[str], Path]) -> Path:
    user_config("\n[audit]\nenabled = true\n")
    root = tmp_path / "project"
    (root / ".pegboard").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "secret.txt").write_text("hidden\n")
    (root / ".pegboard" / "config.toml").write_text('[permissions]\ndeny = ["Read(./secret.txt)"]\n')
    return root


def test_each_decision_is_recorded_with_its_source(project: Path) -> None:
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        async with toolbox.session(session_id="audited") as session:
            assert not (await session.call("Read", {"file_path": str(project / "a.txt")})).is_error
            assert (await session.call("Read", {"file_path": str(project / "secret.txt")})).is_error

    asyncio.run(calls())
    allowed, denied = audit_rows(toolbox)
    assert allowed["session_id"] == denied["session_id"] == "audited"
    assert (allowed["tool"], allowed["decision"], allowed["source_kind"], allowed["source"]) == \
        ("Read", "allow", "plugin", "plugin fs")
    assert allowed["mode"] == "default" and allowed["call_id"] == "c1" and allowed["pid"] == os.getpid()
    assert f'file_path="{project / "a.txt"}"' in allowed["input_preview"]
    assert len(allowed["input_digest"]) == 64
    assert (denied["decision"], denied["source_kind"]) == ("deny", "rule")
    assert denied["source"] == f"rule Read(./secret.txt) in {project / '.pegboard' / 'config.toml'}"
    assert denied["answer"] is None


def test_the_persons_answer_and_host_are_recorded(project: Path) -> None:
    person = Person(Answer(allow=True), Answer(allow=True, remember="session"), Answer(allow=False))
    toolbox = Toolbox.load(cwd=project, plugins=["fs"], host=person)

    async def calls() -> list[bool]:
        session = toolbox.session()
        results = []
        for n in range(3):  # a folder each: the session grant of the second covers only its folder
            (project / f"d{n}").mkdir()
            results.append(await session.call("Write", {"file_path": str(project / f"d{n}" / "w.txt"),
                                                        "content": "x"}))
        return [r.is_error for r in results]

    assert asyncio.run(calls()) == [False, False, True]
    rows = audit_rows(toolbox)
    assert [(r["decision"], r["answer"], r["host"], r["source_kind"]) for r in rows] == [
        ("allow", "once", "host", "person"),
        ("allow", "session", "host", "person"),
        ("deny", "declined", "host", "person"),
    ]


def test_an_ask_with_no_one_to_ask_is_recorded_as_its_deny(project: Path) -> None:
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    result = asyncio.run(toolbox.session().call("Write", {"file_path": str(project / "w.txt"), "content": "x"}))
    assert result.is_error
    (row,) = audit_rows(toolbox)
    assert row["decision"] == "deny" and row["answer"] is None and "no one is there to ask" in row["reason"]


@pytest.mark.slow
def test_with_the_audit_off_a_call_never_touches_the_store(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    script = textwrap.dedent(f"""
        import asyncio, sys
        from pegboard import Toolbox
        toolbox = Toolbox.load(cwd={str(tmp_path)!r})
        result = asyncio.run(toolbox.session().call("Read", {{"file_path": {str(tmp_path / 'a.txt')!r}}}))
        assert "hello" in result.text_content()
        print(sorted(m for m in sys.modules if m.startswith(("sqlalchemy", "pegboard._services.audit", "pegboard._services.store"))))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# --- never in the way; nothing lost -----------------------------------------------------------

WRITER = """
import asyncio, sys
from pegboard import Toolbox
root, count = sys.argv[1], int(sys.argv[2])
toolbox = Toolbox.load(cwd=root, plugins=["fs"])
async def main():
    session = toolbox.session()
    for n in range(count):
        result = await session.call("Read", {"file_path": root + "/a.txt"})
        assert not result.is_error, result
asyncio.run(main())
print("done")
"""


@pytest.mark.slow
def test_four_processes_writing_at_once_lose_no_row(project: Path) -> None:
    count = 150
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(project), str(count)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0 and out.strip() == "done", err
        assert "audit" not in err, err
    rows = audit_rows(Toolbox.load(cwd=project, plugins=["fs"]))
    per_pid: dict[int, int] = {}
    for row in rows:
        per_pid[row["pid"]] = per_pid.get(row["pid"], 0) + 1
    assert sorted(per_pid) == sorted(p.pid for p in procs)
    assert set(per_pid.values()) == {count}


@pytest.mark.slow
def test_a_store_that_is_down_never_fails_a_call_and_loses_nothing(
        tmp_path: Path, user_config: Callable[[str], Path], isolated_env: Path) -> None:
    blocker = tmp_path / "db-folder"
    blocker.write_text("a file where the database's folder should be")
    user_config(f'[store]\nurl = "sqlite:///{blocker}/audit.db"\n[audit]\nenabled = true\n')
    (tmp_path / "a.txt").write_text("alpha\n")
    down = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path), "3"], capture_output=True, text=True)
    assert down.returncode == 0 and down.stdout.strip() == "done", down.stderr
    assert "the audit log cannot be written" in down.stderr
    assert "3 audit rows the store refused are kept in" in down.stderr
    doctor = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "doctor"])
    assert "audit" in doctor.output and "3 decisions wait" in doctor.output, doctor.output
    blocker.unlink()
    back = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path), "2"], capture_output=True, text=True)
    assert back.returncode == 0, back.stderr
    rows = audit_rows(Toolbox.load(cwd=tmp_path, plugins=["fs"]))
    assert len(rows) == 5 and len({r["pid"] for r in rows}) == 2


# --- the commands ---------------------------------------------------------------------------


def test_audit_list_filters_and_json(project: Path) -> None:
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        async with toolbox.session(session_id="one") as one:
            await one.call("Read", {"file_path": str(project / "a.txt")})
            await one.call("Read", {"file_path": str(project / "secret.txt")})
        async with toolbox.session(session_id="two") as two:
            await two.call("Glob", {"pattern": "*.txt"})

    asyncio.run(calls())
    flush_all()
    run = lambda *a: CliRunner().invoke(cli, ["--cwd", str(project), "audit", *a])  # noqa: E731
    out = run("list").output
    assert out.count("\n") == 6 and "Glob" in out and "rule Read(./secret.txt)" in out
    assert [r["tool"] for r in json.loads(run("list", "--session", "one", "--json").output)] == ["Read", "Read"]
    assert [r["session_id"] for r in json.loads(run("list", "--tool", "Glob", "--json").output)] == ["two"]
    denied = json.loads(run("list", "--decision", "deny", "--json").output)
    assert [r["source_kind"] for r in denied] == ["rule"]
    assert json.loads(run("list", "--since", "1h", "--json").output)
    assert json.loads(run("list", "--since", "2999-01-01", "--json").output) == []
    bad = run("list", "--since", "yesterday")
    assert bad.exit_code == 2 and "expected an age such as 10m" in bad.output
    assert len(run("tail", "-n", "2", "--no-follow").output.strip().splitlines()) == 4
    assert run("prune").exit_code == 0


def test_retention_by_row_count(project: Path, user_config: Callable[[str], Path]) -> None:
    user_config("max_rows = 2\n")  # in [audit]
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        session = toolbox.session()
        for _ in range(5):
            await session.call("Read", {"file_path": str(project / "a.txt")})

    asyncio.run(calls())
    flush_all()  # the writer applies retention after its first batch
    assert [r["call_id"] for r in audit_rows(toolbox)] == ["c4", "c5"]
    asyncio.run(calls())  # and then only every ten minutes
    assert len(audit_rows(toolbox)) == 7
    result = CliRunner().invoke(cli, ["--cwd", str(project), "audit", "prune"])
    assert "deleted 5 audit rows" in result.output
    assert len(audit_rows(toolbox)) == 2


def test_retention_by_age(project: Path, user_config: Callable[[str], Path]) -> None:
    user_config("max_age_days = 1\n")  # in [audit]
    toolbox = Toolbox.load(cwd=project, plugins=["fs"])

    async def calls() -> None:
        session = toolbox.session()
        for _ in range(3):
            await session.call("Read", {"file_path": str(project / "a.txt")})

    asyncio.run(calls())
    from sqlalchemy import update

    from pegboard._services.tables import audit

    flush_all()
    with toolbox.plugins.stores("pegboard").begin() as conn:  # two of them two days old
        conn.execute(update(audit).where(audit.c.call_id.in_(["c1", "c2"])).values(at=time.time() - 2 * 86400))
    result = CliRunner().invoke(cli, ["--cwd", str(project), "audit", "prune"])
    assert result.exit_code == 0 and "deleted 2 audit rows" in result.output, result.output
    assert [r["call_id"] for r in audit_rows(toolbox)] == ["c3"]


@pytest.mark.slow
def test_audit_tail_follows_new_decisions(project: Path) -> None:
    tail = subprocess.Popen([PEGBOARD, "--cwd", str(project), "audit", "tail", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)  # let it start and find the log empty
        writer = subprocess.run([sys.executable, "-c", WRITER, str(project), "2"], capture_output=True, text=True)
        assert writer.returncode == 0, writer.stderr
        lines = [json.loads(tail.stdout.readline()) for _ in range(2)]
        assert [row["call_id"] for row in lines] == ["c1", "c2"]
    finally:
        tail.terminate()
        tail.wait(timeout=10)


def test_an_audit_log_from_the_first_schema_is_upgraded(project: Path) -> None:
    """Version 1 of the core's tables had no parent_id in the audit: a
    database made then keeps its rows and gains the column."""
    import sqlalchemy as sa

    from pegboard._services.store import SCHEMA_TABLE
    from pegboard._services.tables import audit

    toolbox = Toolbox.load(cwd=project, plugins=["fs"])
    engine = toolbox.plugins.stores.store.engine
    old = sa.Table("pegboard_audit", sa.MetaData(),
                   *[sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                     for c in audit.columns if c.name != "parent_id"])
    with engine.begin() as conn:
        old.create(conn)
        conn.execute(sa.text(f"CREATE TABLE {SCHEMA_TABLE} (component VARCHAR(100) PRIMARY KEY, "
                             "version INTEGER NOT NULL, updated_at FLOAT NOT NULL)"))
        conn.execute(sa.text(f"INSERT INTO {SCHEMA_TABLE} VALUES ('pegboard', 1, 0)"))
        conn.execute(old.insert().values(at=time.time(), session_id="before", tool="Read", decision="allow", reason="r",
                                         source="plugin fs", source_kind="plugin", mode="default",
                                         input_digest="0" * 64, input_preview="", pid=1))
    toolbox.plugins.stores("pegboard").ready()  # `pegboard store migrate`: first use refuses an older schema

    async def calls() -> None:
        async with toolbox.session(session_id="kid", parent_id="mom") as kid:
            await kid.call("Read", {"file_path": str(project / "a.txt")})

    asyncio.run(calls())
    rows = audit_rows(toolbox)
    assert [(r["session_id"], r["parent_id"]) for r in rows] == [("before", None), ("kid", "mom")]
    assert toolbox.plugins.stores.store.versions()["pegboard"] == core_schema().version

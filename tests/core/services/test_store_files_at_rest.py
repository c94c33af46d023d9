"""Files at rest: pegboard's data folders 0700, the SQLite database, its
``-wal`` and ``-shm`` and the audit spool 0600, fixed at each start (a
sandboxed command or a session's folder may have made them first with the
umask's modes), and ``pegboard doctor`` warns when they are wider."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pegboard.testing import PegboardEnv

PEGBOARD = str(Path(sys.executable).parent / "pegboard")

pytestmark = pytest.mark.slow


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, *args, "--cwd", str(cwd)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PEGBOARD_PLUGINS": "fs"})


def files_line(cwd: Path) -> dict[str, str]:
    doctor = run("doctor", "--json", cwd=cwd)
    [line] = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "files at rest"]
    return line


def made_wide_first(env: PegboardEnv) -> Path:
    """What a sandboxed command that ran first leaves: the data dir and a
    session folder 0755, the database and its side files 0644."""
    data = env.data_dir
    (data / "sessions" / "s1").mkdir(parents=True)
    for folder in (data, data / "sessions", data / "sessions" / "s1"):
        folder.chmod(0o755)
    database = data / "pegboard.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE planted (x)")
    for suffix in ("", "-wal", "-shm"):
        side = database.with_name(database.name + suffix)
        side.touch()
        side.chmod(0o644)
    return database


def test_a_command_narrows_what_another_made_wide_and_doctor_tells(pegboard_env: PegboardEnv,
                                                                    tmp_path: Path) -> None:
    database = made_wide_first(pegboard_env)
    data = pegboard_env.data_dir
    warned = files_line(tmp_path)  # doctor looks before it opens the store, which narrows them
    assert warned["status"] == "warn", warned
    assert f"{data} (755, want 700)" in warned["detail"] and f"{database} (644, want 600)" in warned["detail"]

    database.chmod(0o644)
    data.chmod(0o755)
    migrated = run("store", "migrate", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert mode(data) == 0o700 and mode(data / "sessions") == 0o700
    for side in (database, database.with_name("pegboard.db-wal"), database.with_name("pegboard.db-shm")):
        assert not side.exists() or mode(side) == 0o600, (side, oct(mode(side)))
    assert files_line(tmp_path)["status"] == "ok"

    (data / "mcp").mkdir(mode=0o755)  # a plugin's folder, made by another path
    migrated = run("store", "migrate", cwd=tmp_path)
    assert mode(data / "mcp") == 0o700

    (data / "sessions").chmod(0o775)  # made wider again
    again = files_line(tmp_path)
    assert again["status"] == "warn" and f"{data / 'sessions'} (775, want 700)" in again["detail"], again


def test_the_wal_and_shm_of_a_database_made_0644_are_0600_while_it_is_open(pegboard_env: PegboardEnv) -> None:
    from pegboard._services.store import Store

    database = pegboard_env.data_dir / "pegboard.db"
    pegboard_env.data_dir.mkdir(parents=True)
    pegboard_env.data_dir.chmod(0o755)
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE planted (x)")
    database.chmod(0o644)
    store = Store(f"sqlite:///{database}")
    with store.begin() as conn:
        conn.exec_driver_sql("INSERT INTO planted VALUES (1)")
    with store.begin(read_only=True) as conn:  # open: the side files are there now
        assert conn.exec_driver_sql("SELECT count(*) FROM planted").scalar() == 1
        modes = {p.name: mode(p) for p in database.parent.iterdir() if p.name.startswith("pegboard.db")}
    store.dispose()
    assert modes == {"pegboard.db": 0o600, "pegboard.db-wal": 0o600, "pegboard.db-shm": 0o600}
    assert mode(pegboard_env.data_dir) == 0o700


def test_a_new_store_and_a_sessions_folder_are_private_from_the_start(pegboard_env: PegboardEnv,
                                                                       tmp_path: Path) -> None:
    from pegboard import Toolbox

    session = Toolbox.load(cwd=tmp_path, plugins=["fs"]).session("default")
    folder = session.data_dir  # the data dir did not exist: every folder made for it is 0700
    assert [mode(p) for p in (pegboard_env.data_dir, folder.parent, folder)] == [0o700] * 3
    assert files_line(tmp_path)["status"] == "ok"

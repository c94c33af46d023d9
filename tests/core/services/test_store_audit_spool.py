"""The audit spool (issue 29's promise): rows the store refused are kept in a
private file, written by the next process that reaches the store, and the
file is deleted once its rows are in, so no later process inserts them again."""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard._services.audit import flush_all

pytestmark = pytest.mark.slow

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


def write(root: Path, count: int) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", WRITER, str(root), str(count)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    return done


def count_rows(root: Path) -> int:
    from sqlalchemy import func, select

    from pegboard._services.tables import audit

    toolbox = Toolbox.load(cwd=root, plugins=["fs"])
    flush_all()
    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        return int(conn.execute(select(func.count()).select_from(audit)).scalar_one())


def test_a_replayed_spool_file_is_deleted_and_never_inserted_again(
        tmp_path: Path, user_config: Callable[[str], Path], isolated_env: Path) -> None:
    blocker = tmp_path / "db-folder"
    blocker.write_text("a file where the database's folder should be")
    user_config(f'[store]\nurl = "sqlite:///{blocker}/audit.db"\n[audit]\nenabled = true\n')
    (tmp_path / "a.txt").write_text("alpha\n")
    down = write(tmp_path, 3)
    assert "3 audit rows the store refused are kept in" in down.stderr
    [spooled] = list((isolated_env / "data" / "pegboard" / "audit-spool").glob("*/*.jsonl"))
    assert stat.S_IMODE(spooled.stat().st_mode) == 0o600
    assert stat.S_IMODE(spooled.parent.stat().st_mode) == 0o700

    blocker.unlink()
    write(tmp_path, 2)  # loads the spool first, then its own rows
    assert not spooled.exists(), "the replayed spool file is still there"
    assert count_rows(tmp_path) == 5
    write(tmp_path, 1)  # a later process finds nothing more to replay
    assert count_rows(tmp_path) == 6

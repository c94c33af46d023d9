"""Issue 30, item 7: what faults leave behind and what they tell the model.

Orphan temp files of interrupted writes are removed by the next write into
their folder; a full disk on a new file says no file was made; a NUL byte
or a deeply nested input gets a sentence about the call, not an exception's
name; an MCP server too slow to start leaves no asyncio noise on stderr.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard.paths import atomic_write

pytestmark = pytest.mark.anyio


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    return root


@pytest.fixture
async def session(proj: Path) -> AsyncIterator[Any]:
    tb = Toolbox.load(cwd=proj, plugins=["fs"])
    s = tb.session(mode="acceptEdits")
    yield s
    await s.aclose()


# --- orphan temp files -------------------------------------------------------------


def _orphan(folder: Path, name: str, age_s: float) -> Path:
    tmp = folder / f".{name}.0123456789ab.pegboard-tmp"
    tmp.write_bytes(b"half a file")
    then = time.time() - age_s
    os.utime(tmp, (then, then))
    return tmp


async def test_an_old_orphan_temp_file_goes_with_the_next_write_and_a_fresh_one_stays(
        session: Any, proj: Path) -> None:
    old = _orphan(proj, "big.bin", age_s=3600)
    fresh = _orphan(proj, "other.bin", age_s=5)  # as a live writer's would be
    lookalike = proj / ".notes.0123456789ab.pegboard-tmp.txt"  # not a temp file's name
    lookalike.write_text("mine")
    os.utime(lookalike, (time.time() - 3600,) * 2)
    r = await session.call("Write", {"file_path": str(proj / "new.txt"), "content": "hello\n"})
    assert not r.is_error, r.text_content()
    assert not old.exists()
    assert fresh.exists() and lookalike.exists()


def test_the_sweep_leaves_folders_and_other_folders_alone(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    folder_named_like_one = here / ".x.0123456789ab.pegboard-tmp"
    folder_named_like_one.mkdir()
    os.utime(folder_named_like_one, (time.time() - 3600,) * 2)
    elsewhere = _orphan(there, "y", age_s=3600)
    atomic_write(here / "a.txt", "x")
    assert folder_named_like_one.is_dir() and elsewhere.exists()
    assert (here / "a.txt").read_text() == "x"

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
import shutil
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


# --- a full disk ---------------------------------------------------------------------


def _fail_writes_where(monkeypatch: pytest.MonkeyPatch, fails: Any) -> None:
    """os.write fails as on a full disk (ENOSPC) for every fd whose file
    ``fails(path)``; other writes (the event loop's, pytest's) go through."""
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if fails(target):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


async def test_a_full_disk_on_a_new_file_says_it_was_not_created(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_writes_where(monkeypatch, lambda path: path.endswith(".pegboard-tmp"))
    r = await session.call("Write", {"file_path": str(proj / "new.txt"), "content": "hello\n"})
    text = r.text_content()
    assert r.is_error and "No space left on device" in text
    assert "new.txt was not created" in text and "left as it was" not in text
    assert os.listdir(proj) == []


async def test_a_disk_full_everywhere_on_a_new_file_is_a_sentence_too(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the checkpoint is written first: with the data folder's disk full too, it is what fails
    assert session.data_dir.is_dir()
    _fail_writes_where(monkeypatch, lambda path: path.startswith("/") and not path.startswith("/dev/"))
    r = await session.call("Write", {"file_path": str(proj / "new.txt"), "content": "hello\n"})
    text = r.text_content()
    assert r.is_error and "No space left on device" in text and "OSError" not in text
    assert "new.txt was not created" in text and "checkpoint" in text
    assert os.listdir(proj) == []


async def test_a_full_disk_on_an_existing_file_says_it_was_left_as_it_was(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = proj / "old.txt"
    target.write_text("old\n")
    assert not (await session.call("Read", {"file_path": str(target)})).is_error
    _fail_writes_where(monkeypatch, lambda path: path.endswith(".pegboard-tmp"))
    r = await session.call("Write", {"file_path": str(target), "content": "new\n"})
    text = r.text_content()
    assert r.is_error and "The file was left as it was." in text and "OSError" not in text
    assert target.read_text() == "old\n" and os.listdir(proj) == ["old.txt"]


async def test_orphans_go_before_the_write_so_a_full_disk_gets_their_space_back(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    orphan = _orphan(proj, "big.bin", age_s=3600)
    _fail_writes_where(monkeypatch, lambda path: path.endswith(".pegboard-tmp"))
    r = await session.call("Write", {"file_path": str(proj / "new.txt"), "content": "hello\n"})
    assert r.is_error and "was not created" in r.text_content()
    assert not orphan.exists()


async def test_a_full_disk_past_the_checkpoint_says_so(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = proj / "old.txt"
    target.write_text("old\n")
    assert not (await session.call("Read", {"file_path": str(target)})).is_error
    _fail_writes_where(monkeypatch, lambda path: path.startswith(str(proj)) and path.endswith(".pegboard-tmp"))
    r = await session.call("Write", {"file_path": str(target), "content": "new\n"})
    assert r.is_error and r.text_content() == (f"Writing {target} failed: No space left on device. "
                                               "The file was left as it was.")
    assert target.read_text() == "old\n"


# --- what the model is told: sentences, not exception names -------------------------

_REPR_SHAPES = ("ValueError", "RecursionError", "OSError", "TypeError", "internal error", "Traceback", "Errno")


def _assert_a_sentence(text: str, tool: str) -> None:
    assert not any(shape in text for shape in _REPR_SHAPES), text
    assert tool in text, text


@pytest.mark.parametrize(("tool", "args"), [
    ("Read", {"file_path": "{proj}/a\x00.txt"}),
    ("Write", {"file_path": "{proj}/a\x00.txt", "content": "x"}),
    ("Edit", {"file_path": "{proj}/a\x00.txt", "old_string": "x", "new_string": "y"}),
    ("NotebookEdit", {"notebook_path": "{proj}/n\x00.ipynb", "new_source": "x"}),
    ("Glob", {"pattern": "*", "path": "{proj}/\x00"}),
    ("Grep", {"pattern": "x", "path": "{proj}/\x00"}),
    ("Grep", {"pattern": "a\x00b"}),
    ("Grep", {"pattern": "x", "glob": "*\x00.py"}),
    ("Grep", {"pattern": "x", "type": "p\x00y"}),
])
@pytest.mark.parametrize("engine", ["rg", "python"])
async def test_a_nul_byte_in_any_fs_argument_is_a_sentence(
        proj: Path, tmp_path: Path, tool: str, args: dict[str, str], engine: str) -> None:
    if engine == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep (rg) is not installed")
    (proj / "a.txt").write_text("x\n")
    config = tmp_path / "engine.toml"
    config.write_text(f'[plugins.fs]\nsearch_backend = "{engine}"\n')
    s = Toolbox.load(cwd=proj, plugins=["fs"], config=config).session(mode="acceptEdits")
    try:
        r = await s.call(tool, {k: v.replace("{proj}", str(proj)) for k, v in args.items()})
    finally:
        await s.aclose()
    assert r.is_error
    _assert_a_sentence(r.text_content(), tool)
    assert "NUL" in r.text_content()


def _nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["list", "object", "json text", "just past the bound"])
async def test_a_deeply_nested_input_is_refused_with_a_sentence(session: Any, proj: Path, shape: str) -> None:
    path = str(proj / "a.txt")
    arguments: Any
    if shape == "list":
        arguments = {"file_path": path, "limit": _nested_list(100_000)}
    elif shape == "object":
        deep: Any = {}
        for _ in range(100_000):
            deep = {"a": deep}
        arguments = {"file_path": path, "extra": deep}
    elif shape == "json text":
        arguments = '{"file_path": %s, "x": %s}' % (json.dumps(path), "[" * 100_000 + "]" * 100_000)
    else:
        arguments = {"file_path": path, "limit": _nested_list(100)}
    r = await session.call("Read", arguments)
    assert r.is_error
    _assert_a_sentence(r.text_content(), "Read")
    assert "nested more than 100 levels deep" in r.text_content() and "nothing was run" in r.text_content()


async def test_a_nested_input_within_the_bound_is_checked_as_usual(session: Any, proj: Path) -> None:
    r = await session.call("Read", {"file_path": str(proj / "a.txt"), "limit": _nested_list(98)})
    assert r.is_error and "nested" not in r.text_content()
    assert "limit" in r.text_content()  # the ordinary validation message for the wrong type


async def test_an_internal_failure_tells_the_model_what_to_do_and_the_operator_what_failed(
        session: Any, proj: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from pegboard._engine import pipeline as _pipeline

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the frobnicator is out of sync")

    # the pipeline's own step failing (a bug), which no tool or argument can cause on purpose
    monkeypatch.setattr(_pipeline, "validate", broken)
    r = await session.call("Read", {"file_path": str(proj / "a.txt")}, call_id="call-7")
    text = r.text_content()
    assert r.is_error
    _assert_a_sentence(text, "Read")
    assert "frobnicator" not in text and "not in your arguments" in text
    err = capsys.readouterr().err
    assert "RuntimeError: the frobnicator is out of sync" in err and "call-7" in err


# --- an MCP server too slow to start ---------------------------------------------------

KITCHEN_SINK = Path(__file__).parents[2] / "mcp_servers" / "kitchen_sink.py"


@pytest.mark.slow
def test_an_mcp_server_that_misses_its_start_timeout_leaves_no_asyncio_noise(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    config = tmp_path / "slow.toml"
    # KS_NEVER_START: the server sleeps before it answers anything
    config.write_text(f'[plugins.mcp.servers.slow]\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(KITCHEN_SINK))}]\nstartup_timeout_s = 1.0\n'
                      f'env = {{ KS_NEVER_START = "1" }}\n[permissions]\nallow = ["mcp__slow"]\n')
    pegboard = Path(sys.executable).parent / "pegboard"
    done = subprocess.run([str(pegboard), "--cwd", str(tmp_path), "--config", str(config),
                           "call", "mcp__slow__echo", "--input", '{"text": "x"}'],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode != 0
    assert "never retrieved" not in done.stderr and "CancelledError" not in done.stderr, done.stderr

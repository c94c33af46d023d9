"""The fs tools through the real pipeline: Toolbox, Session, permissions, handlers."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard._api.tools import ImageContent, ToolResult

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


async def call(s: Any, tool: str, **args: Any) -> ToolResult:
    return await s.call(tool, args)


# --- Read ----------------------------------------------------------------------------


async def test_read_text_numbers_lines(session: Any, proj: Path) -> None:
    f = proj / "a.py"
    f.write_text("import os\nprint(os)\n")
    r = await call(session, "Read", file_path=str(f))
    assert not r.is_error
    assert r.text_content() == "     1\timport os\n     2\tprint(os)"


async def test_read_default_limit_says_how_to_continue(session: Any, proj: Path) -> None:
    f = proj / "long.txt"
    f.write_text("".join(f"{i}\n" for i in range(1, 2501)))
    r = await call(session, "Read", file_path=str(f))
    text = r.text_content()
    assert "  2000\t2000" in text and "2001\t2001" not in text
    assert "offset=2001" in text
    r = await call(session, "Read", file_path=str(f), offset=2001, limit=10)
    assert r.text_content().splitlines()[0] == "  2001\t2001"


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        ("dir", "is a directory"),
        ("missing", "does not exist"),
        ("binary", "binary file"),
        ("empty", "is empty"),
        ("large", "offset and limit"),
        ("past_end", "past the end"),
    ],
)
async def test_read_explains_what_it_cannot_show(session: Any, proj: Path, setup: str, needle: str) -> None:
    target = proj / "t"
    args: dict[str, Any] = {}
    if setup == "dir":
        target.mkdir()
    elif setup == "binary":
        target.write_bytes(b"\x7fELF\x00\x00\x01")
    elif setup == "empty":
        target.write_bytes(b"")
    elif setup == "large":
        target.write_text("x" * 100 + "\n" * 5000)
        target.write_bytes(b"y" * 300_000)
    elif setup == "past_end":
        target.write_text("one\n")
        args = {"offset": 50}
    r = await call(session, "Read", file_path=str(target), **args)
    assert needle in r.text_content()
    assert r.is_error is (setup != "empty")


async def test_read_missing_suggests_similar_names(session: Any, proj: Path) -> None:
    (proj / "config.yaml").write_text("a: 1\n")
    r = await call(session, "Read", file_path=str(proj / "config.yml"))
    assert r.is_error and "config.yaml" in r.text_content()


async def test_allow_large_reads_big_file_in_pages_under_the_core_cap(session: Any, proj: Path) -> None:
    big = proj / "big.txt"
    big.write_text("z" * 100 + "\n" + "line\n" * 60_000)
    r = await call(session, "Read", file_path=str(big), allow_large=True)
    text = r.text_content()
    # no refusal, no spill file: Read stops at a line under the core's result cap and says where to go on
    assert not r.is_error and text.startswith("     1\tzzz") and "continue with offset=" in text
    assert len(text) <= 30_000


async def test_allow_large_reads_everything_when_results_may_be_large(proj: Path) -> None:
    cfg = proj / "big.toml"
    cfg.write_text("[results]\nmax_chars = 5000000\n")
    s = Toolbox.load(cwd=proj, plugins=["fs"], config=cfg).session(mode="default")
    big = proj / "big.txt"
    big.write_text("z" * 100 + "\n" + "line\n" * 60_000)
    r = await call(s, "Read", file_path=str(big))
    assert r.is_error and "allow_large" in r.text_content()
    r = await call(s, "Read", file_path=str(big), allow_large=True)
    assert not r.is_error and r.text_content().endswith(" 60001\tline")
    await s.aclose()


async def test_read_image_returns_image_content(session: Any, proj: Path) -> None:
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    f = proj / "pixel.png"
    f.write_bytes(png)
    r = await call(session, "Read", file_path=str(f))
    images = [c for c in r.content if isinstance(c, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data) == png


def _pdf(pages: list[str]) -> bytes:
    """A minimal valid PDF with one text line per page, byte offsets computed."""
    objs: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    font = 3 + 2 * len(pages)
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                    f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode())
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


@pytest.mark.slow
async def test_read_pdf_pages(session: Any, proj: Path) -> None:
    f = proj / "doc.pdf"
    f.write_bytes(_pdf(["Alpha page", "Beta page", "Gamma page"]))
    r = await call(session, "Read", file_path=str(f), pages="2-3")
    text = r.text_content()
    assert not r.is_error, text
    assert "Beta page" in text and "Gamma page" in text and "Alpha" not in text
    r = await call(session, "Read", file_path=str(f), pages="1-30")
    assert r.is_error and "at most 20" in r.text_content()
    r = await call(session, "Read", file_path=str(f), pages="9")
    assert r.is_error and "3 page" in r.text_content()


def _notebook() -> dict[str, Any]:
    return {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {"id": "intro", "cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]},
            {"id": "code1", "cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["print(41 + 1)"],
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["42\n"]}]},
        ],
    }


async def test_read_notebook_cells_with_outputs(session: Any, proj: Path) -> None:
    f = proj / "nb.ipynb"
    f.write_text(json.dumps(_notebook()))
    r = await call(session, "Read", file_path=str(f))
    text = r.text_content()
    assert '<cell id="intro" type="markdown">' in text and "# Title" in text
    assert '<cell id="code1" type="code"' in text and "print(41 + 1)" in text and "42" in text


# --- Write / Edit and read tracking ---------------------------------------------------


async def test_write_new_file_needs_no_read(session: Any, proj: Path) -> None:
    f = proj / "new.txt"
    r = await call(session, "Write", file_path=str(f), content="hello\n")
    assert not r.is_error and f.read_text() == "hello\n"


async def test_write_and_edit_refuse_unread_files(session: Any, proj: Path) -> None:
    f = proj / "exists.txt"
    f.write_text("original\n")
    for tool, args in [("Write", {"content": "x"}), ("Edit", {"old_string": "original", "new_string": "x"})]:
        r = await call(session, tool, file_path=str(f), **args)
        assert r.is_error and "have not read" in r.text_content()
    assert f.read_text() == "original\n"


async def test_edit_refuses_file_changed_since_read_until_reread(session: Any, proj: Path) -> None:
    f = proj / "a.txt"
    f.write_text("one\ntwo\n")
    await call(session, "Read", file_path=str(f))
    f.write_text("one\ntwo\nthree (someone else)\n")  # a formatter or a person
    r = await call(session, "Edit", file_path=str(f), old_string="two", new_string="2")
    assert r.is_error and "changed on disk" in r.text_content()
    await call(session, "Read", file_path=str(f))
    r = await call(session, "Edit", file_path=str(f), old_string="two", new_string="2")
    assert not r.is_error and f.read_text() == "one\n2\nthree (someone else)\n"
    # our own write counts as seen: a second edit needs no re-read
    r = await call(session, "Edit", file_path=str(f), old_string="one\n2", new_string="1\n2")
    assert not r.is_error and f.read_text().startswith("1\n2\n")


async def test_changed_file_is_noted_once_per_change(session: Any, proj: Path) -> None:
    watched, other = proj / "w.txt", proj / "o.txt"
    watched.write_text("v1\n")
    other.write_text("x\n")
    await call(session, "Read", file_path=str(watched))
    watched.write_text("v2, longer\n")
    first = await call(session, "Read", file_path=str(other))
    assert "w.txt, which you read earlier, has changed" in first.text_content()
    second = await call(session, "Glob", pattern="*.txt")
    assert "has changed" not in second.text_content()
    watched.write_text("v3, longer still\n")
    third = await call(session, "Grep", pattern="x")
    assert "w.txt, which you read earlier, has changed" in third.text_content()


async def test_shell_reads_count_through_the_hook(session: Any, proj: Path) -> None:
    f = proj / "shown.txt"
    f.write_text("alpha\n")
    # what the shell plugin does after `cat shown.txt`
    session.toolbox.context_for("fs").notify("pegboard_file_read", session=session, path=f, source="Bash")
    r = await call(session, "Edit", file_path=str(f), old_string="alpha", new_string="beta")
    assert not r.is_error and f.read_text() == "beta\n"


async def test_edit_occurrences(session: Any, proj: Path) -> None:
    f = proj / "dup.txt"
    f.write_text("x = 1\nx = 1\n")
    await call(session, "Read", file_path=str(f))
    r = await call(session, "Edit", file_path=str(f), old_string="x = 1", new_string="x = 2")
    assert r.is_error and "2 times" in r.text_content()
    r = await call(session, "Edit", file_path=str(f), old_string="x = 1", new_string="x = 1")
    assert r.is_error and "same" in r.text_content()
    r = await call(session, "Edit", file_path=str(f), old_string="x = 1", new_string="x = 2", replace_all=True)
    assert not r.is_error and f.read_text() == "x = 2\nx = 2\n"


async def test_edit_keeps_crlf_and_bom(session: Any, proj: Path) -> None:
    f = proj / "win.txt"
    f.write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    await call(session, "Read", file_path=str(f))
    r = await call(session, "Edit", file_path=str(f), old_string="line one\nline two", new_string="a\nb\nc")
    assert not r.is_error, r.text_content()
    assert f.read_bytes() == b"\xef\xbb\xbfa\r\nb\r\nc\r\n"
    r = await call(session, "Write", file_path=str(f), content="x\ny\n")
    assert f.read_bytes() == b"\xef\xbb\xbfx\r\ny\r\n"


async def test_write_keeps_permission_bits(session: Any, proj: Path) -> None:
    f = proj / "run.sh"
    f.write_text("#!/bin/sh\n")
    os.chmod(f, 0o755)
    await call(session, "Read", file_path=str(f))
    await call(session, "Write", file_path=str(f), content="#!/bin/sh\necho hi\n")
    assert os.stat(f).st_mode & 0o777 == 0o755


# --- NotebookEdit ----------------------------------------------------------------------


async def test_notebook_edit_modes(session: Any, proj: Path) -> None:
    f = proj / "nb.ipynb"
    f.write_text(json.dumps(_notebook()))
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="code1", new_source="x")
    assert r.is_error and "have not read" in r.text_content()
    await call(session, "Read", file_path=str(f))
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="code1", new_source="print(1)\nprint(2)")
    assert not r.is_error, r.text_content()
    nb = json.loads(f.read_text())
    assert nb["cells"][1]["source"] == ["print(1)\n", "print(2)"] and nb["cells"][1]["outputs"] == []
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="intro", new_source="## new",
                   edit_mode="insert", cell_type="markdown")
    assert not r.is_error
    nb = json.loads(f.read_text())
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "markdown", "code"]
    assert nb["cells"][1]["source"] == ["## new"] and nb["cells"][1]["id"]
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="intro", edit_mode="delete")
    assert r.is_error and "new_source" in r.text_content()  # required, as models know the tool
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="intro", edit_mode="delete",
                   new_source="")
    assert not r.is_error and len(json.loads(f.read_text())["cells"]) == 2
    r = await call(session, "NotebookEdit", notebook_path=str(f), cell_id="nope", new_source="x")
    assert r.is_error and "no cell" in r.text_content()
    r = await call(session, "NotebookEdit", notebook_path=str(f), edit_mode="insert", new_source="x")
    assert r.is_error and "cell_type" in r.text_content()


# --- checkpoints --------------------------------------------------------------------


@pytest.mark.slow
async def test_checkpoints_rewind_api_and_cli(proj: Path) -> None:
    from pegboard.plugins.fs._checkpoints import CheckpointStore, session_checkpoints_dir

    tb = Toolbox.load(cwd=proj, plugins=["fs"])
    s = tb.session(mode="acceptEdits")
    f = proj / "doc.txt"
    f.write_text("v0\n")
    await call(s, "Read", file_path=str(f))
    await call(s, "Edit", file_path=str(f), old_string="v0", new_string="v1")
    await call(s, "Edit", file_path=str(f), old_string="v1", new_string="v2")
    created = proj / "created.txt"
    await call(s, "Write", file_path=str(created), content="new\n")
    store = CheckpointStore(session_checkpoints_dir(s.id))
    cps = store.entries()
    assert [(cp.tool, cp.existed) for cp in cps] == [("Edit", True), ("Edit", True), ("Write", False)]
    assert store.content(cps[1]) == b"v1\n"
    await s.aclose()

    # the CLI finds the session by id and rewinds to before the second edit
    env = {**os.environ}
    cli = [sys.executable, "-c", "from pegboard._cli.main import main; main()"]
    out = subprocess.run([*cli, "checkpoints", "list", "--session", s.id], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert "3 checkpoint(s)" in out.stdout and str(f) in out.stdout
    out = subprocess.run([*cli, "checkpoints", "restore", "2", "--session", s.id],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert f.read_text() == "v1\n" and not created.exists()
    # the restore itself was checkpointed: rewinding it (through the public API) brings v2 back
    from pegboard.plugins.fs import list_checkpoints, restore_checkpoint

    restore_ids = [cp.id for cp in list_checkpoints(s.id) if cp.tool == "restore"]
    assert restore_checkpoint(s.id, restore_ids[0])
    assert f.read_text() == "v2\n" and created.read_text() == "new\n"


@pytest.mark.slow
async def test_reading_far_into_a_big_file_streams(session: Any, proj: Path) -> None:
    import tracemalloc

    f = proj / "big.txt"
    with open(f, "w", encoding="ascii") as out:
        for block in range(50):
            out.write("".join(f"{block * 10_000 + i + 1:>10} {'x' * 28}\n" for i in range(10_000)))
    assert f.stat().st_size == 20_000_000
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        r = await call(session, "Read", file_path=str(f), offset=480_001, limit=500)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = r.text_content().splitlines()
    assert lines[0].startswith("480001\t") and lines[0].split("\t")[1].strip().startswith("480001")
    # a 20 MB file read at its end: memory grows by chunks and the lines shown, not by the file
    assert peak - base < 4 * 1024 * 1024


async def test_spilled_results_can_be_read_back_outside_the_project(proj: Path) -> None:
    # the core saves an over-long result under the session's data dir and tells the model to
    # Read it: that folder lies outside the working directories, yet must not ask
    for i in range(400):
        (proj / f"f{i:03}.txt").write_text("needle " + "x" * 100 + "\n")
    s = Toolbox.load(cwd=proj, plugins=["fs"]).session(mode="default")
    r = await s.call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    saved = [w for w in r.text_content().split() if w.startswith(str(s.data_dir))]
    assert saved, r.text_content()[-400:]
    spilled = saved[0].rstrip(";.,")
    back = await s.call("Read", {"file_path": spilled, "offset": 1, "limit": 5})
    assert not back.is_error and "needle" in back.text_content()
    other = await s.call("Read", {"file_path": str(s.data_dir.parent)})
    assert other.is_error  # only the session's own folder, not its neighbours
    await s.aclose()


async def test_deleted_file_is_noted_once(session: Any, proj: Path) -> None:
    gone = proj / "gone.txt"
    gone.write_text("bye\n")
    await call(session, "Read", file_path=str(gone))
    gone.unlink()
    first = await call(session, "Glob", pattern="*")
    assert "gone.txt, which you read earlier, has been deleted" in first.text_content()
    second = await call(session, "Glob", pattern="*")
    assert "has been deleted" not in second.text_content()


async def test_a_small_reads_shortcut_shows_what_the_general_read_shows(session: Any, proj: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Read's shortcut for a small UTF-8 file from its first line gives the
    result the general way (sniff, a file object, read_window) gives."""
    from pegboard.plugins.fs import _read

    bodies = {
        "plain.py": b"import os\nprint(os)\n", "no-newline.txt": b"a\nb", "crlf.txt": b"a\r\nb\r\n",
        "empty.txt": b"", "gif.txt": b"GIF89a and text", "bom.txt": b"\xef\xbb\xbfhi\n", "nul.bin": b"a\x00b",
        "latin.txt": b"caf\xe9\n", "pdf.txt": b"%PDF-x", "nb.ipynb": b'{"cells": []}', "long-line.txt": b"x" * 3000,
        "many.txt": b"".join(b"%d\n" % i for i in range(2100)), "euro.txt": "\u20ac {x} 100%\n".encode(),
    }
    argsets: list[dict[str, Any]] = [{}, {"offset": 1}, {"limit": 5}, {"offset": 1, "limit": 2}, {"offset": 2},
                                     {"pages": "1"}, {"allow_large": True}]
    taken = []
    real_small_text = _read._small_text

    def spy(*a: Any) -> Any:
        got = real_small_text(*a)
        taken.append(got is not None)
        return got

    shown = {}
    monkeypatch.setattr(_read, "_small_text", spy)
    for name, body in bodies.items():
        (proj / name).write_bytes(body)
        for extra in argsets:
            shown[name, str(extra)] = await call(session, "Read", file_path=str(proj / name), **extra)
    monkeypatch.setattr(_read, "_small_text", lambda *a: None)
    for name in bodies:
        for extra in argsets:
            general = await call(session, "Read", file_path=str(proj / name), **extra)
            assert shown[name, str(extra)] == general, (name, extra)
    assert sum(taken) > 20 and not all(taken)

"""Glob and Grep: ripgrep and the Python engine must agree, ignore files included."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard.plugins.fs._grep import GrepError, GrepQuery, find_rg, grep_python, grep_rg
from pegboard.plugins.fs._search import list_files

pytestmark = pytest.mark.anyio
RG = find_rg(None)
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed")



@pytest.fixture
def tree(tmp_path: Path) -> Path:
    outer = tmp_path.resolve()
    (outer / ".gitignore").write_text("parent_ignored.txt\n")  # above the search root: still applies
    root = outer / "repo"
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n",
        ".ignore": "by_dot_ignore.txt\n",
        "a.py": "import os\n\ndef handler():\n    return os.getcwd()\n\n\n# TODO: more\n",
        "b.py": "x = 1\nTODO = 'not a comment'\nprint(x)\n",
        "notes.md": "Handler notes\nline two\nline three\nhandler again\n",
        "app.log": "handler in a log\n",
        "keep.log": "handler kept\n",
        "build/out.py": "handler built\n",
        "parent_ignored.txt": "handler\n",
        "by_dot_ignore.txt": "handler\n",
        ".hidden.py": "handler hidden\n",
        "sub/.gitignore": "local.txt\n",
        "sub/local.txt": "handler local\n",
        "sub/deep/c.py": "def other_handler():\n    pass\n",
        "sub/deep/d.ts": "const handler = 1;\n",
        "sub/deep/e.tsx": "export const Handler = () => null;\n",
        "win.txt": "first\r\nhandler crlf\r\nlast\r\n",
        "uni.txt": "caf\u00e9 handler \u00fcber\n",
        "a.txt": "handler a\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8"))
    (root / "blob.bin").write_bytes(b"handler\x00\x01\x02")
    (root / "linked.py").symlink_to(root / "a.py")
    (root / "linked_dir").symlink_to(root / "sub")
    return root


QUERIES: list[dict[str, Any]] = [
    {"pattern": "handler"},
    {"pattern": "handler", "mode": "content"},
    {"pattern": "handler", "mode": "count"},
    {"pattern": "HANDLER", "ignore_case": True, "mode": "content"},
    {"pattern": "handler", "mode": "content", "before": 1, "after": 1},
    {"pattern": "TODO", "mode": "content", "after": 2, "line_numbers": False},
    {"pattern": "handler", "glob": "*.py"},
    {"pattern": "handler", "glob": "*.{ts,tsx}", "ignore_case": True},
    {"pattern": "handler", "glob": "!*.py", "mode": "count"},
    {"pattern": "handler", "type": "py", "mode": "content"},
    {"pattern": "handler", "glob": "sub/**/*.py"},
    {"pattern": "handler", "glob": "/*.txt"},
    {"pattern": r"def \w+\(\):\n\s+return", "multiline": True, "mode": "content"},
    {"pattern": "line two.line", "multiline": True, "mode": "files_with_matches"},
    {"pattern": "crlf", "mode": "content"},
    {"pattern": "caf\u00e9", "mode": "content"},
    {"pattern": "nothing-matches-this"},
    # The Python engine searches a whole file at once, then per line only where
    # that could differ: anchors, empty matches, lines that all match, and a
    # match that would run across a line end must all come out as ripgrep's.
    {"pattern": "^$", "mode": "count"},
    {"pattern": "^", "mode": "content"},
    {"pattern": "x*", "mode": "count"},
    {"pattern": r"\w+$", "mode": "content"},
    {"pattern": r"^\s*return", "mode": "content"},
    {"pattern": r"handler\s+\w+", "mode": "content"},
    {"pattern": r"os\b", "mode": "count", "ignore_case": True},
    {"pattern": r"\Ahandler", "mode": "content"},
]


def _q(root: Path, spec: dict[str, Any]) -> GrepQuery:
    return GrepQuery(root=root, **spec)


@needs_rg
@pytest.mark.parametrize("spec", QUERIES, ids=[str(i) for i in range(len(QUERIES))])
async def test_python_engine_matches_ripgrep(tree: Path, spec: dict[str, Any]) -> None:
    assert RG is not None
    q = _q(tree, spec)
    expected = await grep_rg(RG, q, None)
    assert grep_python(q, None) == expected


@needs_rg
@pytest.mark.parametrize("pattern", ["^", "$", "^$", "a*", r"\s", "b$", "^a"])
@pytest.mark.parametrize("mode", ["files_with_matches", "count", "content"])
async def test_engines_agree_on_files_with_odd_endings(tmp_path: Path, pattern: str, mode: str) -> None:
    assert RG is not None
    files = {"empty.txt": "", "blank.txt": "\n\n", "no_end.txt": "a\nb", "dense.txt": "a\n" * 40 + "b\n",
             "spaces.txt": "a \n \n", "one.txt": "a"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    q = GrepQuery(pattern=pattern, root=tmp_path, mode=mode)  # type: ignore[arg-type]
    assert grep_python(q, None) == await grep_rg(RG, q, None)


@needs_rg
@pytest.mark.parametrize("pattern", ["handler", r"handler\b", "dler", "caf", r"(?i)HANDLER", "handler|kept",
                                     r"(?x) h a n d l e r", r"han\w*r"])
@pytest.mark.parametrize("mode", ["files_with_matches", "content"])
async def test_engines_agree_where_bytes_are_not_utf8(tmp_path: Path, pattern: str, mode: str) -> None:
    # The Python engine passes over a file whose bytes lack the text every
    # match starts with, before decoding it: invalid bytes next to that text
    # must not change which files and lines are found.
    files = {"lead.txt": b"\xff\x80handler\xc3\n", "cut.txt": b"\xe2handler\n", "split.txt": b"han\xffdler\n",
             "latin.txt": "caf\u00e9 handler\n".encode("latin-1"), "kept.txt": b"\x80kept\n",
             "plain.txt": b"handler\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    assert RG is not None
    q = GrepQuery(pattern=pattern, root=tmp_path, mode=mode)  # type: ignore[arg-type]
    assert grep_python(q, None) == await grep_rg(RG, q, None)


@needs_rg
@pytest.mark.parametrize("mode", ["files_with_matches", "count", "content"])
async def test_engines_agree_on_big_files_binary_or_not(tmp_path: Path, mode: str) -> None:
    # The Python engine reads no further in a big file with a NUL byte in its first 8 KiB.
    files = {"early_nul.txt": b"ab\x00\n" + b"x" * 200_000 + b"\nhandler\n",
             "nul_ends_peek.txt": b"x" * 8191 + b"\x00" + b"x" * 60_000 + b"handler\n",
             "nul_after_peek.txt": b"x" * 8192 + b"\x00" + b"x" * 60_000 + b"handler\n",
             "big_text.txt": b"x\n" * 100_000 + b"handler\n", "small.bin": b"handler\x00"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    assert RG is not None
    q = GrepQuery(pattern="handler", root=tmp_path, mode=mode)  # type: ignore[arg-type]
    lines, more = grep_python(q, None)
    assert (lines, more) == await grep_rg(RG, q, None)
    assert len(lines) == 1 and "big_text.txt" in lines[0]


@pytest.mark.parametrize(("pattern", "required"), [
    (r"def __init__\(self", b"def __init__(self"), (r"import\s+os", b"import"), ("(?x) h e l l o", b"hello"),
    ("caf\u00e9 x", b"caf"), ("abc|abd", None), ("(?i)hello", None), ("ab*c", None), ("^import", None),
    ("fo", None),
])
def test_the_text_a_match_must_start_with(pattern: str, required: bytes | None) -> None:
    import re

    from pegboard.plugins.fs._grep import _required_bytes

    assert _required_bytes(re.compile(pattern)) == required


@pytest.mark.slow
@pytest.mark.parametrize("pattern", [r"def __init__\(self", r"han\w*r", r"handler\b", r"hand$", r"hand(?!ler)",
                                     r"hand\s*\r", r"caf\u00e9", r"abc\Z", r"abc\B"])
def test_lines_holding_the_required_text_are_the_lines_a_search_line_by_line_finds(pattern: str) -> None:
    # The shortcut decodes and searches only the lines that hold the text a
    # match must start with; it must find what decoding the whole file and
    # searching every line finds, whatever bytes sit around those lines.
    import random
    import re

    from pegboard.plugins.fs._grep import _lines_holding, _matched_lines, _required_bytes

    rx = re.compile(pattern)
    required = _required_bytes(rx)
    assert required is not None
    pieces = [b"handler", b"hand", b"def __init__(self", b"def __init__(", b"caf\xc3\xa9", b"caf\xc3", b"abc",
              b"\n", b"\r\n", b"\r", b" ", b"x", b"\xff", b"\xe2\x82", b"\x80", b"\xc3", b"\xf0\x9f\x98"]
    rng = random.Random(pattern)
    answered = 0
    for _ in range(400):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        expected = _matched_lines(rx, text, lines, False)
        first = data.find(required)
        got = [] if first == -1 else _lines_holding(rx, data, required, first, False)
        if got is None:  # too many lines hold the text: the caller searches the whole file
            assert data.count(b"\n") >= 16
            continue
        answered += 1
        assert got == expected, data
        found_one = first != -1 and _lines_holding(rx, data, required, first, True) == [-1]
        assert found_one == bool(expected), data
    assert answered > 300


@needs_rg
@pytest.mark.parametrize("mode", ["files_with_matches", "count", "content"])
async def test_engines_agree_where_many_lines_hold_the_required_text(tmp_path: Path, mode: str) -> None:
    # Past 16 such lines the Python engine searches the whole file instead.
    files = {"late.txt": "handle\n" * 40 + "handler\n" + "handle\n" * 3, "none.txt": "handle\n" * 40,
             "early.txt": "handler\n" + "handle\n" * 40, "edge.txt": "handle\n" * 15 + "handler\n",
             "over.txt": "handle\n" * 16 + "handler\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert RG is not None
    q = GrepQuery(pattern=r"handle\w", root=tmp_path, mode=mode)  # type: ignore[arg-type]
    lines, more = grep_python(q, None)
    assert (lines, more) == await grep_rg(RG, q, None)
    assert len(lines) == 4 and not any("none.txt" in ln for ln in lines)  # one line or name for each other file


@needs_rg
async def test_engines_agree_on_a_single_file_root(tree: Path) -> None:
    assert RG is not None
    q = GrepQuery(pattern="handler", root=tree / "app.log", mode="content")  # ignored, but named explicitly
    assert grep_python(q, None) == await grep_rg(RG, q, None) == ([f"{tree / 'app.log'}:1:handler in a log"], False)


def test_python_engine_respects_ignore_files(tree: Path) -> None:
    found = grep_python(GrepQuery(pattern="handler", root=tree), None)[0]
    names = {Path(p).relative_to(tree).as_posix() for p in found}
    assert names == {"a.py", "a.txt", "keep.log", "notes.md", "sub/deep/c.py", "sub/deep/d.ts", "uni.txt", "win.txt"}


def test_head_limit_cuts_and_says_more(tree: Path) -> None:
    lines, more = grep_python(GrepQuery(pattern="handler", root=tree), 2)
    assert len(lines) == 2 and more


@needs_rg
async def test_rg_head_limit_stops_early(tree: Path) -> None:
    assert RG is not None
    lines, more = await grep_rg(RG, GrepQuery(pattern="handler", root=tree), 2)
    assert len(lines) == 2 and more


@pytest.mark.parametrize("engine", ["python", pytest.param("rg", marks=needs_rg)])
async def test_bad_regex_is_an_error_for_the_model(tree: Path, engine: str) -> None:
    q = GrepQuery(pattern="(unclosed", root=tree)
    with pytest.raises(GrepError):
        if engine == "rg":
            assert RG is not None
            await grep_rg(RG, q, None)
        else:
            grep_python(q, None)


@needs_rg
@pytest.mark.parametrize("hidden", [False, True])
async def test_file_lists_agree(tree: Path, hidden: bool) -> None:
    with_rg = sorted(await list_files(tree, RG, hidden))
    with_py = sorted(await list_files(tree, None, hidden))
    assert with_rg == with_py
    assert (tree / ".hidden.py" in with_py) is hidden
    assert tree / "build" / "out.py" not in with_py and tree / "linked.py" not in with_py


# --- through the tools -------------------------------------------------------------------


def _config(tmp_path: Path, backend: str) -> Path:
    cfg = tmp_path / f"{backend}.toml"
    cfg.write_text(f'[plugins.fs]\nsearch_backend = "{backend}"\n')
    return cfg


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=needs_rg)])
async def test_grep_tool_modes(tree: Path, tmp_path: Path, backend: str) -> None:
    s = Toolbox.load(cwd=tree, plugins=["fs"], config=_config(tmp_path, backend)).session(mode="default")
    r = await s.call("Grep", {"pattern": "handler", "type": "py"})
    # as in ripgrep, a type (or glob) that names a file whitelists it even when hidden
    assert r.text_content().splitlines() == ["Found 3 file(s)", *(str(tree / n) for n in (".hidden.py", "a.py",
                                                                                         "sub/deep/c.py"))]
    r = await s.call("Grep", {"pattern": "TODO", "output_mode": "content", "-A": 1, "glob": "a.py"})
    assert r.text_content().splitlines() == [f"{tree / 'a.py'}:7:# TODO: more"]
    r = await s.call("Grep", {"pattern": "x", "output_mode": "count", "path": str(tree / "b.py")})
    assert r.text_content().startswith(f"{tree / 'b.py'}:2")
    r = await s.call("Grep", {"pattern": "handler", "head_limit": 1})
    assert "head_limit=1" in r.text_content()
    r = await s.call("Grep", {"pattern": "zzz-none"})
    assert not r.is_error and "No matches" in r.text_content()
    r = await s.call("Grep", {"pattern": "[", "output_mode": "content"})
    assert r.is_error
    await s.aclose()


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=needs_rg)])
async def test_glob_tool(tree: Path, tmp_path: Path, backend: str) -> None:
    s = Toolbox.load(cwd=tree, plugins=["fs"], config=_config(tmp_path, backend)).session(mode="default")
    os.utime(tree / "sub" / "deep" / "c.py", (1, 1))
    os.utime(tree / "a.py", (2_000_000_000, 2_000_000_000))
    r = await s.call("Glob", {"pattern": "**/*.py"})
    assert r.text_content().splitlines() == [str(tree / "a.py"), str(tree / "b.py"), str(tree / "sub/deep/c.py")]
    r = await s.call("Glob", {"pattern": "*.py"})  # top level only
    assert str(tree / "sub/deep/c.py") not in r.text_content()
    r = await s.call("Glob", {"pattern": "**/*.{ts,tsx}", "path": str(tree / "sub")})
    assert sorted(r.text_content().splitlines()) == [str(tree / "sub/deep/d.ts"), str(tree / "sub/deep/e.tsx")]
    r = await s.call("Glob", {"pattern": ".hidden*"})  # naming dot-files asks for them
    assert r.text_content() == str(tree / ".hidden.py")
    r = await s.call("Glob", {"pattern": "../*"})
    assert r.is_error and "relative" in r.text_content()
    r = await s.call("Glob", {"pattern": "*.nothing"})
    assert not r.is_error and "No files" in r.text_content()
    await s.aclose()


async def test_rg_backend_required_but_missing_is_explained(tree: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.fs]\nsearch_backend = "rg"\nrg_path = "/nonexistent/rg"\n')
    s = Toolbox.load(cwd=tree, plugins=["fs"], config=cfg).session(mode="default")
    r = await s.call("Grep", {"pattern": "x"})
    assert r.is_error and "ripgrep was not found" in r.text_content()
    await s.aclose()


def test_python_engine_stops_when_told(tree: Path) -> None:
    import threading

    stop = threading.Event()
    assert grep_python(GrepQuery(pattern="handler", root=tree), None, stop)[0]
    stop.set()  # what a cancelled or timed-out Grep does: its worker thread cannot be killed
    assert grep_python(GrepQuery(pattern="handler", root=tree), None, stop) == ([], False)


@pytest.fixture
def ignore_kinds(tmp_path: Path) -> Path:
    """Every kind of ignore file the walk reads, at several depths, and
    names that only look like them."""
    root = tmp_path.resolve() / "kinds"
    files = {
        ".gitignore": "*.a\n*.b\n*.c\n",
        ".ignore": "!*.b\n",  # over .gitignore
        ".rgignore": "!*.c\nonly_rg.txt\n",  # over .ignore
        ".git/info/exclude": "excluded.txt\n",
        "excluded.txt": "", "only_rg.txt": "", "x.a": "", "x.b": "", "x.c": "", "kept.txt": "",
        "one/.rgignore": "*.txt\n", "one/a.txt": "", "one/a.py": "",
        "one/two/.rgignore": "!a.txt\n", "one/two/a.txt": "", "one/two/b.txt": "",  # deeper over shallower
        "one/two/.ignore": "!b.txt\n",  # but one/.rgignore over it
        "prec/.ignore": "*.u\n", "prec/deep/.gitignore": "!a.u\n", "prec/deep/a.u": "",  # .ignore over .gitignore
        "prec/.gitignore": "*.t\n", "prec/deep/.ignore": "!a.t\n", "prec/deep/a.t": "", "prec/deep/b.t": "",
        "repo/.git/HEAD": "", "repo/excluded.txt": "", "repo/x.a": "", "repo/only_rg.txt": "",  # a repository's root
        "nested/.git/info/exclude": "inner.txt\n", "nested/inner.txt": "", "nested/outer.txt": "",
        "worktree/.git": "gitdir: elsewhere\n", "worktree/w.txt": "", "worktree/excluded.txt": "",
        "lookalike/.gitignore.bak": "*\n", "lookalike/.rgignorex": "*\n", "lookalike/l.txt": "",
        "dirnamed/.ignore/inside.txt": "", "dirnamed/d.txt": "",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "linked").mkdir()
    (root / "linked" / "s.txt").write_text("")
    (root / "linked" / ".gitignore").symlink_to(root / ".rgignore")  # not followed: no ignore file
    return root


def test_the_ignore_files_a_folder_listing_shows_are_those_an_open_of_each_finds(ignore_kinds: Path) -> None:
    # The walk tries only the ignore files its folder listing shows; trying
    # every name, as it once did, must give the same layers in every folder.
    from pegboard.plugins.fs._walk import _by_name, _dot_names, _load

    folders = [ignore_kinds] + sorted(p for p in ignore_kinds.rglob("*") if p.is_dir() and ".git" not in p.parts)
    loaded = 0
    for folder in folders:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with os.scandir(dfd) as it:
                entries = sorted(it, key=_by_name)
            by_listing = _load(folder, dfd, _dot_names(entries))
            assert _dot_names(entries) == {e.name for e in entries if e.name.startswith(".")}
            by_trying = _load(folder, dfd)
        finally:
            os.close(dfd)
        assert [(x.base, x.spec) for x in by_listing] == [(x.base, x.spec) for x in by_trying], folder
        loaded += len(by_listing)
    # the root's four, one/'s one, one/two's two, prec's and prec/deep's two
    # each, nested's exclude; not a folder named .ignore, a symlink, a
    # worktree's .git file or a lookalike
    assert loaded == 12


def test_every_kind_of_ignore_file_is_honoured(ignore_kinds: Path) -> None:
    from pegboard.plugins.fs._walk import walk_files

    found = {p.relative_to(ignore_kinds).as_posix() for p in walk_files(ignore_kinds)}
    # In a repository's root (repo/ and worktree/ hold a .git) the git files of
    # the folders above no longer apply, the others do.
    assert found == {"kept.txt", "x.b", "x.c", "one/a.py", "one/two/a.txt", "nested/outer.txt", "prec/deep/a.t",
                     "repo/excluded.txt", "repo/x.a", "worktree/w.txt", "worktree/excluded.txt",
                     "lookalike/l.txt", "dirnamed/d.txt", "linked/s.txt"}
    # the same from inside, where the folders above are the search root's parents
    assert {p.relative_to(ignore_kinds).as_posix() for p in walk_files(ignore_kinds / "repo")} == {
        "repo/excluded.txt", "repo/x.a"}
    assert {p.relative_to(ignore_kinds).as_posix() for p in walk_files(ignore_kinds / "prec" / "deep")} == {
        "prec/deep/a.t"}


@needs_rg
@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("below", [".", "repo", "prec/deep", "one/two"])
async def test_file_lists_agree_over_every_kind_of_ignore_file(ignore_kinds: Path, hidden: bool, below: str) -> None:
    root = ignore_kinds / below
    assert sorted(await list_files(root, RG, hidden)) == sorted(await list_files(root, None, hidden))

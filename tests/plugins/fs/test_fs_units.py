"""Pure parts of the fs plugin: path rules, text windows, encodings, edits, globs."""

from __future__ import annotations

import codecs
import io
import os
from pathlib import Path

import pytest

from pegboard.plugins.fs._pathrule import PathRule
from pegboard.plugins.fs._text import decode_for_edit, encode_like, read_window, sniff
from pegboard.plugins.fs._walk import Found, glob_regex
from pegboard.plugins.fs._write import replace_in


# --- PathRule ----------------------------------------------------------------------


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "src").mkdir()
    (root / ".env").write_text("SECRET=1")
    (root / "docs" / "deep" / "a.md").write_text("x")
    return root.resolve()


@pytest.mark.parametrize(
    ("spec", "rel", "expected"),
    [
        ("./.env", ".env", True),
        ("./.env", "src/.env", False),  # ./ anchors at the base
        (".env", "src/.env", True),  # no slash: any depth, as in .gitignore
        ("docs/**", "docs/deep/a.md", True),
        ("docs/**", "docs", True),  # the folder itself, so Grep over it is covered
        ("docs/**", "src/docs/x", False),  # inner slash anchors
        ("/src/*.py", "src/a.py", True),
        ("/src/*.py", "src/sub/a.py", False),
        ("*.md", "docs/deep/a.md", True),
        ("src", "src/a/b.py", True),  # a folder name covers what is inside
    ],
)
def test_relative_specifiers(proj: Path, spec: str, rel: str, expected: bool) -> None:
    assert PathRule(spec, proj).matches(proj / rel) is expected


def test_absolute_and_sibling_prefix(tmp_path: Path) -> None:
    app, app2 = tmp_path / "srv" / "app", tmp_path / "srv" / "app2"
    app.mkdir(parents=True)
    app2.mkdir(parents=True)
    rule = PathRule(f"/{app.resolve()}/**", None)
    assert rule.matches(app.resolve() / "x.txt")
    assert rule.matches(app.resolve())
    assert not rule.matches(app2.resolve() / "x.txt")  # /srv/app2 is not under /srv/app


def test_absolute_rule_through_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    # paths are matched resolved, so the rule's own prefix is resolved too
    rule = PathRule(f"/{tmp_path}/alias/**", None)
    assert rule.matches((real / "f").resolve())


def test_home_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    rule = PathRule("~/.ssh/**", None)
    assert rule.matches(home.resolve() / ".ssh" / "id_rsa")
    assert not rule.matches(home.resolve() / "notes.txt")


@pytest.mark.parametrize("spec", ["", "  ", "a\x00b", "../outside/**"])
def test_bad_specifiers(spec: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        PathRule(spec, tmp_path)


def test_relative_rule_needs_base() -> None:
    with pytest.raises(ValueError, match="base"):
        PathRule("docs/**", None)


# --- sniff and windows -------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "kind", "extra"),
    [
        (b"", "empty", ""),
        (b"\x89PNG\r\n\x1a\n....", "image", "image/png"),
        (b"\xff\xd8\xff\xe0", "image", "image/jpeg"),
        (b"GIF89a..", "image", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image", "image/webp"),
        (b"%PDF-1.7\n", "pdf", "application/pdf"),
        (b"hello\x00world", "binary", ""),
        (codecs.BOM_UTF16_LE + "hi".encode("utf-16-le"), "text", "utf-16-le"),
        ("h\u00e9".encode() + b"\xc3", "text", "utf-8"),  # cut mid-character at the sniff boundary
        (b"caf\xe9\n", "text", "latin-1"),
    ],
)
def test_sniff(head: bytes, kind: str, extra: str) -> None:
    got = sniff(head)
    assert got.kind == kind
    if kind == "image" or kind == "pdf":
        assert got.mime_type == extra
    elif kind == "text":
        assert got.encoding == extra


def _window(data: bytes, encoding: str = "utf-8", **kw: int):
    opts = {"offset": 1, "limit": 2000, "max_line_chars": 2000, "max_output_chars": 10**6, **kw}
    return read_window(io.BytesIO(data), encoding, **opts)


def test_window_numbers_and_continuation() -> None:
    data = b"".join(b"line %d\n" % i for i in range(1, 11))
    win = _window(data, offset=4, limit=3)
    assert win.lines == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert (win.first, win.last, win.more) == (4, 6, True)
    tail = _window(data, offset=9, limit=5)
    assert [ln.split("\t")[1] for ln in tail.lines] == ["line 9", "line 10"]
    assert tail.more is False


def test_window_past_end_reports_length() -> None:
    win = _window(b"a\nb\nc\n", offset=10)
    assert win.lines == [] and win.lines_in_file == 3


def test_window_skip_crosses_chunk_boundaries() -> None:
    # 300k lines of 10 bytes: the skip spans several 1 MiB chunks
    data = b"".join(b"%09d\n" % i for i in range(300_000))
    win = _window(data, offset=250_001, limit=2)
    assert win.lines == ["250001\t000250000", "250002\t000250001"]


def test_long_lines_are_cut_and_counted() -> None:
    data = b"short\n" + b"x" * 50_000 + b"\nafter\n"
    win = _window(data, max_line_chars=100)
    assert win.cut_lines == 1
    assert win.lines[1].startswith("     2\t" + "x" * 100) and "cut at 100" in win.lines[1]
    assert win.lines[2] == "     3\tafter"  # the rest of the long line was drained, not shown


def test_output_cap_stops_cleanly() -> None:
    data = b"".join(b"%0100d\n" % i for i in range(100))
    win = _window(data, max_output_chars=1000)
    assert win.capped and win.more and 0 < len(win.lines) < 100
    assert sum(len(x) + 1 for x in win.lines) <= 1000


def test_crlf_and_bom_are_not_shown() -> None:
    win = _window(codecs.BOM_UTF8 + b"a\r\nb\r\n", "utf-8-sig")
    assert win.lines == ["     1\ta", "     2\tb"]


def test_utf16_window() -> None:
    data = codecs.BOM_UTF16_LE + "one\ntwo\nthree\n".encode("utf-16-le")
    win = _window(data, "utf-16-le", offset=2, limit=1)
    assert win.lines == ["     2\ttwo"]


# --- encodings and edits -----------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"plain\nutf8 \xc3\xa9\n",
        codecs.BOM_UTF8 + b"bom\r\nfile\r\n",
        codecs.BOM_UTF16_LE + "wide\r\ntext\r\n".encode("utf-16-le"),
        codecs.BOM_UTF16_BE + "big\nendian\n".encode("utf-16-be"),
        b"latin \xe9t\xe9\n",
    ],
)
def test_decode_encode_round_trip(data: bytes) -> None:
    enc = decode_for_edit(data)
    assert enc is not None
    assert encode_like(enc.text, enc.encoding) == data


def test_stray_bytes_past_the_head_survive_an_edit() -> None:
    data = b"x" * 9000 + b"\ncaf\xc3\xa9 \xff end\n"  # invalid UTF-8 only after the sniffed head
    enc = decode_for_edit(data)
    assert enc is not None and enc.encoding == "utf-8"
    text, count, _ = replace_in(enc.text, enc.newline, "caf\u00e9", "tea", False)
    assert count == 1
    assert encode_like(text, enc.encoding) == b"x" * 9000 + b"\ntea \xff end\n"


def test_binary_is_not_editable() -> None:
    assert decode_for_edit(b"\x00\x01\x02") is None


def test_crlf_edit_keeps_crlf() -> None:
    enc = decode_for_edit(b"one\r\ntwo\r\nthree\r\n")
    assert enc is not None and enc.newline == "\r\n"
    text, count, _ = replace_in(enc.text, enc.newline, "one\ntwo", "uno\ndos\nmas", False)
    assert count == 1
    assert encode_like(text, enc.encoding) == b"uno\r\ndos\r\nmas\r\nthree\r\n"


def test_edit_rules() -> None:
    with pytest.raises(ValueError, match="same"):
        replace_in("a", "\n", "a", "a", False)
    with pytest.raises(ValueError, match="2 times"):
        replace_in("x x", "\n", "x", "y", False)
    with pytest.raises(ValueError, match="not found"):
        replace_in("abc", "\n", "zzz", "y", False)
    assert replace_in("x x", "\n", "x", "y", True)[:2] == ("y y", 2)


# --- globs -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "sub/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("src/**/test_*.ts", "src/a/b/test_x.ts", True),
        ("src/**/test_*.ts", "lib/test_x.ts", False),
        ("*.{ts,tsx}", "a.tsx", True),
        ("*.{ts,tsx}", "a.js", False),
        ("file?.[ch]", "file1.c", True),
        ("file?.[!ch]", "file1.c", False),
        ("docs/**", "docs/a/b", True),
    ],
)
def test_glob_regex(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is expected


def test_paths_are_fspath_compatible(tmp_path: Path) -> None:
    # PathRule takes Path objects and strings for the base alike
    assert PathRule("a", os.fspath(tmp_path)).matches(tmp_path.resolve() / "a")


@pytest.mark.slow
def test_a_small_reads_one_join_equals_the_line_by_line_window() -> None:
    """Read's fast path for a small file (one join of prefixes and lines) must
    give exactly what numbering the lines one by one gives, caps included."""
    import random

    from pegboard.plugins.fs._text import Window, _add_lines, _finish, _window_in_memory

    rng = random.Random(21)
    fast_taken = 0
    for _ in range(1500):
        lines = ["".join(rng.choice("ab \t\r\u00e9") for _ in range(rng.randrange(0, 30)))
                 for _ in range(rng.randrange(1, 40))]
        text = "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")
        first = rng.choice([1, 7, 99_990, 999_995])
        limit = rng.randrange(1, 50)
        max_line = rng.randrange(1, 40)
        max_output = rng.randrange(1, 2000)
        got = _window_in_memory(Window(first=first), text, limit, max_line, max_output)
        fast_taken += got._text is not None
        split = text.split("\n")
        if split[-1] == "":
            split.pop()
        want = Window(first=first)
        number = _add_lines(want, split[:limit], max_line, max_output)
        _finish(want, number, more=want.capped or len(split) > limit)
        assert (got.text, got.first, got.last, got.more, got.cut_lines, got.capped) == \
            (want.text, want.first, want.last, want.more, want.cut_lines, want.capped), (text, first, limit)
        assert got.lines == want.lines
    assert fast_taken > 250  # the one-join path was exercised, not only the loop


def test_a_small_reads_whole_text_is_the_windows_text_when_nothing_is_left_out() -> None:
    """whole_text_numbered, a small Read's shortcut past the Window, must give
    exactly the window's text whenever it answers, and answer only where the
    window showed every line, none cut, with no cap (so the Read adds nothing)."""
    import random

    from pegboard.plugins.fs._text import whole_text_numbered, window_of_text

    rng = random.Random(22)
    answered = declined = 0
    for _ in range(2000):
        lines = ["".join(rng.choice("ab \t\r\u00e9") for _ in range(rng.randrange(0, 30)))
                 for _ in range(rng.randrange(1, 40))]
        text = "\n".join(lines) + ("\n" if rng.random() < 0.5 else "")
        bounds = {"limit": rng.randrange(1, 50), "max_line_chars": rng.randrange(1, 40),
                  "max_output_chars": rng.randrange(1, 2000)}
        win = window_of_text(text, **bounds)
        got = whole_text_numbered(text, **bounds)
        whole = not (win.more or win.capped or win.cut_lines)
        if got is None:
            declined += 1
            assert not whole or win.lines[0].startswith("     1\t") and len(win.lines) == 1, (text, bounds)
            continue
        answered += 1
        assert whole and got == win.text, (text, bounds)
    assert answered > 300 and declined > 300


def test_plain_utf8_says_text_only_where_sniff_does() -> None:
    """A small Read's shortcut (plain_utf8: one decode, no sniff) must take
    only what sniff calls plain UTF-8 text, and show its text as decoded."""
    import random

    from pegboard.plugins.fs._text import SNIFF_BYTES, Sniffed, plain_utf8

    heads = [b"", b"GIF87a", b"GIF89a", b"RIFF\x10\x00\x00\x00WEBP", b"RIFFABCDWEBP", b"RIFF....AVI ", b"%PDF-1.7", b"%PD",
             codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE,
             b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF8", b"#!", "\u00e9".encode()]
    alphabet = [b"a", b"\n", b"\r", b" ", b"{", b"%", b"\x00", b"\xc3\xa9", b"\xc3", b"\xe9", b"\xe2\x82\xac"]
    rng = random.Random(21)
    taken = 0
    for _ in range(3000):
        body = b"".join(rng.choice(alphabet) if rng.random() < 0.3 else b"x" for _ in range(rng.randrange(0, 60)))
        data = rng.choice(heads) + body
        if rng.random() < 0.05:
            data = b"y" * (SNIFF_BYTES - 1) + "\u20ac".encode() + body  # a character across the head's end
        text = plain_utf8(data)
        if text is None:
            continue
        taken += 1
        assert sniff(data[:SNIFF_BYTES]) == Sniffed("text", "utf-8"), data[:20]
        assert text == data.decode("utf-8", errors="replace")
    assert taken > 100


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) + 7])
def test_a_found_file_is_read_whole_in_one_read_when_fstat_has_its_size(tmp_path: Path, size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    (tmp_path / "f").write_bytes(data)
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert Found(tmp_path, dfd, "f").read() == data
    finally:
        os.close(dfd)


def test_a_found_file_longer_than_fstat_says_is_read_to_its_end() -> None:
    # /proc files are regular files of size 0: the read must go on past the size fstat gave
    dfd = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    try:
        data = Found(Path("/proc/self"), dfd, "status").read()
    finally:
        os.close(dfd)
    assert data.startswith(b"Name:") and b"\nPid:" in data and data.endswith(b"\n")


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 16) - 1, 1 << 16, (1 << 20) + 7])
@pytest.mark.parametrize("nul_at", [None, 0, (1 << 13) - 1, 1 << 13])
def test_a_found_file_is_read_as_read_does_unless_it_starts_binary(
        tmp_path: Path, size: int, nul_at: int | None) -> None:
    from pegboard.plugins.fs import _walk

    assert (_walk._PEEK_FROM, _walk._PEEK) == (1 << 16, 1 << 13)  # the sizes and places above are around these
    data = bytearray(b"line of text\n" * (size // 13 + 1))[:size]
    if nul_at is not None and nul_at < size:
        data[nul_at] = 0
    (tmp_path / "f").write_bytes(data)
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        whole = Found(tmp_path, dfd, "f").read()
        checked = Found(tmp_path, dfd, "f").read_unless_binary()
    finally:
        os.close(dfd)
    assert whole == data
    # None only where a file of 64 KiB or more has a NUL byte in its first
    # 8 KiB (others are read whole, left to the caller's check); otherwise the
    # same bytes as read()
    if size >= 1 << 16 and b"\x00" in whole[:1 << 13]:
        assert checked is None
    else:
        assert checked == whole


def test_a_found_file_longer_than_fstat_says_is_read_to_its_end_unless_binary() -> None:
    dfd = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
    try:
        data = Found(Path("/proc/self"), dfd, "status").read_unless_binary()
    finally:
        os.close(dfd)
    assert data is not None and data.startswith(b"Name:") and b"\nPid:" in data and data.endswith(b"\n")


@pytest.mark.slow
def test_a_reads_bookkeeping_in_one_call_is_record_then_changes(tmp_path: Path) -> None:
    """ReadTracker.shown (what every Read does) must leave the tracker as
    record then changes(skip=...) leave it, and say the same notes, also
    past the watched limit and with earlier notes on the path read again."""
    import random

    from pegboard.plugins.fs._tracking import _MAX_WATCHED, ReadTracker

    files = [tmp_path / f"f{i}.txt" for i in range(_MAX_WATCHED + 5)]
    for f in files:
        f.write_text("x")
    fused, plain = ReadTracker(), ReadTracker()
    rng = random.Random(23)
    said = 0
    for step in range(700):
        f = str(rng.choice(files if step > 300 else files[:4]))
        if rng.random() < 0.2:
            other = rng.choice(files)
            other.write_text("y" * rng.randrange(1, 9))  # a change for the next notes to report
        st = os.stat(f)
        got = fused.shown(f, st)
        plain.record(f, st)
        assert got == plain.changes(skip=f), (step, f)
        said += bool(got)
        assert list(fused._reads.items()) == list(plain._reads.items())
        assert fused._noted == plain._noted
    assert said > 20

"""Grep's two engines, ripgrep and pure Python, producing the same lines.

Output format is ripgrep's with ``--with-filename --no-heading``:
``path:N:line`` for matches, ``path-N-line`` for context, ``--`` between
groups that are not adjacent (also between files). Both engines visit files
in ripgrep's ``--sort path`` order, so results are stable and comparable.
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import shutil
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._walk import Filters, Found, walk

__all__ = ["GrepError", "GrepQuery", "TYPES", "find_rg", "grep_python", "grep_rg"]

Mode = Literal["content", "files_with_matches", "count"]

# A subset of ripgrep 13's built-in types (``rg --type-list``), for the Python engine.
TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py",), "python": ("*.py",),
    "js": ("*.js", "*.jsx", "*.vue"), "ts": ("*.ts", "*.tsx"),
    "rust": ("*.rs",), "go": ("*.go",), "java": ("*.java", "*.jsp", "*.jspx", "*.properties"),
    "c": ("*.[chH]", "*.[chH].in", "*.cats"),
    "cpp": ("*.[ChH]", "*.[ChH].in", "*.[ch]pp", "*.[ch]pp.in", "*.[ch]xx", "*.[ch]xx.in", "*.cc", "*.cc.in",
            "*.hh", "*.hh.in", "*.inl"),
    "css": ("*.css", "*.scss"), "html": ("*.ejs", "*.htm", "*.html"),
    "json": ("*.json", "composer.lock"), "md": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "markdown": ("*.markdown", "*.md", "*.mdown", "*.mkdn"),
    "toml": ("*.toml", "Cargo.lock"), "yaml": ("*.yaml", "*.yml"), "txt": ("*.txt",),
    "sh": ("*.bash", "*.sh", "*.zsh", "*.ksh", "*.csh", "*.tcsh"),
}


class GrepError(Exception):
    """Something the model should fix (a bad regex, an unknown type)."""


@dataclass(frozen=True)
class GrepQuery:
    pattern: str
    root: Path
    mode: Mode = "files_with_matches"
    glob: str | None = None
    type: str | None = None
    before: int = 0
    after: int = 0
    line_numbers: bool = True
    ignore_case: bool = False
    multiline: bool = False
    exclude: tuple[Path, ...] = ()  # files a deny rule covers; never searched


def find_rg(configured: str | None) -> str | None:
    return shutil.which(configured or "rg")


# --- ripgrep -----------------------------------------------------------------------


def rg_argv(rg: str, q: GrepQuery) -> list[str]:
    argv = [rg, "--no-config", "--no-require-git", "--no-ignore-global", "--sort", "path", "--no-messages",
            "--color", "never", "--with-filename", "--no-heading"]
    if q.mode == "files_with_matches":
        argv.append("--files-with-matches")
    elif q.mode == "count":
        argv.append("--count")
    else:
        argv.append("--line-number" if q.line_numbers else "--no-line-number")
        if q.before:
            argv += ["-B", str(q.before)]
        if q.after:
            argv += ["-A", str(q.after)]
    if q.ignore_case:
        argv.append("--ignore-case")
    if q.multiline:
        argv += ["--multiline", "--multiline-dotall"]
    if q.glob:
        argv += ["--glob", q.glob]
    if q.type:
        argv += ["--type", q.type]
    for path in q.exclude:
        # an anchored "!glob" is an override: it beats every whitelist (later globs win)
        argv += ["--glob", "!/" + _glob_escape(path.relative_to(q.root).as_posix())]
    argv += ["--regexp", q.pattern, "--", str(q.root)]
    return argv


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]{}\\!" else c for c in text)


async def grep_rg(rg: str, q: GrepQuery, limit: int | None) -> tuple[list[str], bool]:
    """ripgrep's lines, at most ``limit``; the bool says whether more were cut."""
    proc = await asyncio.create_subprocess_exec(
        *rg_argv(rg, q), stdin=asyncio.subprocess.DEVNULL,
        # ripgrep anchors --glob patterns at its working directory, not at the search path
        cwd=q.root if q.root.is_dir() else q.root.parent,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=1 << 24,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    more = False
    try:
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                break
            if limit is not None and len(lines) >= limit:
                more = True
                break  # enough: stop reading and stop ripgrep below
            lines.append(raw.decode("utf-8", errors="replace").rstrip("\n"))
        if more:
            proc.kill()
        stderr = (await proc.stderr.read()).decode("utf-8", errors="replace")
        code = await proc.wait()
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if not more and code == 2 and not lines:
        raise GrepError(_rg_message(stderr))
    return lines, more


def _rg_message(stderr: str) -> str:
    text = stderr.strip()
    if "unrecognized file type" in text:
        return f"{text}. Use a ripgrep type name such as py, js, ts, rust, go, md, or the glob parameter instead"
    return text or "ripgrep failed"


# --- Python ------------------------------------------------------------------------


class _NamedRoot:
    """The search root itself when it is a file, read the same careful way."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> bytes:
        from ._safeio import open_read

        with os.fdopen(open_read(self.path), "rb") as f:
            return f.read()

    def read_unless_binary(self) -> bytes | None:
        return self.read()  # the NUL check after the read is all a single file needs


def _files(q: GrepQuery) -> Generator[Found | _NamedRoot, None, None]:
    if q.root.is_file():
        yield _NamedRoot(q.root)  # a file named explicitly is searched whatever the ignore files say
        return
    types: tuple[str, ...] = ()
    if q.type:
        if q.type not in TYPES:
            raise GrepError(f"unknown file type {q.type!r}; known: {', '.join(sorted(TYPES))} "
                            f"(or use the glob parameter)")
        types = TYPES[q.type]
    excluded = set(q.exclude)
    for found in walk(q.root, filters=Filters(q.root, q.glob, types)):
        if not excluded or found.path not in excluded:
            yield found


def _compile(q: GrepQuery) -> re.Pattern[str]:
    flags = re.IGNORECASE if q.ignore_case else 0
    if q.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(q.pattern, flags)
    except re.error as exc:
        raise GrepError(f"invalid regular expression {q.pattern!r}: {exc}") from None


# Constructs whose meaning changes when a line is searched inside its whole
# file rather than on its own: string anchors, lookarounds (they would see
# past the line's end) and flags switched off inside the pattern.
_LINE_BOUND = ("\\A", "\\Z", "(?=", "(?!", "(?<=", "(?<!", "(?-")


def _whole_file(q: GrepQuery, rx: re.Pattern[str]) -> re.Pattern[str] | None:
    """``rx`` to run over a whole file at once, with ^ and $ at line ends;
    None where that could find other lines than a search line by line."""
    if q.multiline or any(mark in q.pattern for mark in _LINE_BOUND):
        return None
    return re.compile(rx.pattern, rx.flags | re.MULTILINE)


def _required_bytes(rx: re.Pattern[str]) -> bytes | None:
    """The ASCII text every match of ``rx`` starts with, as bytes, when it is
    long enough to rule most files out; None when there is none to use.

    ASCII bytes decode one to one in UTF-8, invalid bytes around them
    included, so a file whose bytes lack it has no match: it is passed over
    without decoding or running the expression.
    """
    if rx.flags & re.IGNORECASE:
        return None
    try:
        from re import _constants, _parser

        items = list(_parser.parse(rx.pattern, rx.flags & ~re.UNICODE))
    except Exception:  # another Python's parser: go without the shortcut
        return None
    prefix: list[str] = []
    for op, value in items:
        if op is not _constants.LITERAL or value >= 128:
            break
        prefix.append(chr(value))
    return "".join(prefix).encode("ascii") if len(prefix) >= 3 else None


def _lines_hit(whole: re.Pattern[str], text: str, first_only: bool) -> list[int] | None:
    """The numbers (from 0) of the lines ``whole`` matches, found without
    splitting ``text``; None when a match ran across a line end, where only a
    search line by line can tell which lines match on their own (and when
    most lines match, where that search is also the cheaper).

    Exact otherwise: each search starts at the line after the last hit and
    finds the leftmost match, so a line it passes over has no match in it.
    ``first_only``: stop at the first hit, returned as ``[-1]`` (its line is
    not counted).
    """
    hits: list[int] = []
    line = counted = pos = 0
    while True:
        m = whole.search(text, pos)
        if m is None:
            return hits
        start, end = m.span()
        if text.find("\n", start, end) != -1:
            return None
        if start == len(text) and (not text or text.endswith("\n")):
            return hits  # an empty match after the final newline: no line there
        if first_only:
            return [-1]  # that some line matches is all that is asked: no need to count to it
        line += text.count("\n", counted, start)
        counted = start
        hits.append(line)
        if len(hits) >= 16 and line < 8 * len(hits):
            return None  # hits on most lines: one search per line is cheaper than this loop
        pos = text.find("\n", start) + 1
        if pos == 0:
            return hits


# Lines holding the required text looked at one by one before the whole file
# is searched instead: past a few, one search in C over it all is cheaper.
_LINES_HOLDING = 16


def _lines_holding(rx: re.Pattern[str], data: bytes, required: bytes, first: int, first_only: bool
                   ) -> list[int] | None:
    """The numbers (from 0) of the lines of ``data`` that ``rx`` matches on
    their own, as a search line by line finds them, looking only at the lines
    that hold ``required`` (from the one holding ``first``, its first place):
    every match starts with it. Each such line is decoded alone, which gives
    the same text as decoding the whole file and splitting it, since no UTF-8
    sequence, valid or not, takes in a newline byte. ``first_only``: stop at
    the first hit, returned as ``[-1]``. None when more than
    ``_LINES_HOLDING`` lines would have to be looked at.
    """
    hits: list[int] = []
    line = counted = looked = 0
    at = first
    while at != -1:
        looked += 1
        if looked > _LINES_HOLDING:
            return None
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        if end == -1:
            end = len(data)
        if rx.search(data[start:end].decode("utf-8", errors="replace")):
            if first_only:
                return [-1]
            line += data.count(b"\n", counted, start)
            counted = start
            hits.append(line)
        at = data.find(required, end + 1)
    return hits


def _matched_lines(rx: re.Pattern[str], text: str, lines: list[str], multiline: bool) -> list[int]:
    if not multiline:
        return [i for i, line in enumerate(lines) if rx.search(line)]
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found: set[int] = set()
    for m in rx.finditer(text):
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
        found.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(found)


def grep_python(q: GrepQuery, limit: int | None, stop: threading.Event | None = None) -> tuple[list[str], bool]:
    """The Python engine. ``stop``: set when the call is cancelled, since a thread cannot be killed."""
    rx = _compile(q)
    whole = _whole_file(q, rx)
    required = _required_bytes(rx)
    out: list[str] = []
    files = _files(q)
    for found in files:
        if stop is not None and stop.is_set():
            files.close()
            break
        try:
            data = found.read_unless_binary()
        except OSError:
            continue
        if data is None:
            continue  # binary: a big file with a NUL byte in its first 8 KiB
        first = -1
        if required is not None:
            first = data.find(required)
            if first == -1:
                continue
        if b"\x00" in data:
            continue  # ripgrep skips binary files it finds while walking
        # Only the lines holding the required text can match: where they are
        # few, the rest of the file is neither decoded nor searched
        hits: list[int] | None = None
        if required is not None and not q.multiline:
            hits = _lines_holding(rx, data, required, first, q.mode == "files_with_matches")
            if hits is not None and not hits:
                continue
        if hits is not None:
            text = "" if q.mode != "content" else data.decode("utf-8", errors="replace")
        else:
            text = data.decode("utf-8", errors="replace")
            # Most files of a search have no match: one pass over the whole text
            # finds that, without splitting it into lines.
            hits = None if whole is None else _lines_hit(whole, text, q.mode == "files_with_matches")
            if not hits and hits is not None:
                continue
        lines: list[str] = []
        if hits is None or q.mode == "content":
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
        if hits is None:
            hits = _matched_lines(rx, text, lines, q.multiline)
        if not hits:
            continue
        name = os.fspath(found.path)  # a Path only for a file that matched
        if q.mode == "files_with_matches":
            out.append(name)
        elif q.mode == "count":
            out.append(f"{name}:{len(hits)}")
        else:
            _content(out, name, lines, hits, q)
        if limit is not None and len(out) > limit:
            files.close()  # closes the folder fds the walk still holds
            return out[:limit], True
    return out, False


def _content(out: list[str], name: str, lines: list[str], hits: list[int], q: GrepQuery) -> None:
    hit_set = set(hits)
    shown: list[int] = []
    for h in hits:
        shown.extend(range(max(0, h - q.before), min(len(lines), h + q.after + 1)))
    previous: int | None = None
    for i in sorted(set(shown)):
        # ripgrep prints "--" before any group that does not continue the last one, across files too
        if (q.before or q.after) and out and (previous is None or i != previous + 1):
            out.append("--")
        sep = ":" if i in hit_set else "-"
        number = f"{i + 1}{sep}" if q.line_numbers else ""
        out.append(f"{name}{sep}{number}{lines[i]}")
        previous = i

"""Pure text handling: what kind of file this is, a window of numbered lines,
and encodings/line endings that survive an edit.

Nothing here knows about sessions or permissions, so it is tested directly.
The line window streams: skipping a million lines counts newlines in 1 MiB
chunks and never holds more than one chunk plus the lines shown.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

__all__ = [
    "Encoded",
    "Window",
    "decode_for_edit",
    "encode_like",
    "plain_utf8",
    "read_window",
    "sniff",
    "whole_text_numbered",
    "window_of_text",
]

Kind = Literal["empty", "text", "binary", "image", "pdf"]
_CHUNK = 1 << 20
SNIFF_BYTES = 8192

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True)
class Sniffed:
    kind: Kind
    encoding: str = "utf-8"
    mime_type: str = ""


def sniff(head: bytes) -> Sniffed:
    """Classify a file from its first bytes (magic numbers, BOMs, NULs), not its name."""
    if not head:
        return Sniffed("empty")
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return Sniffed("image", mime_type=mime)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return Sniffed("image", mime_type="image/webp")
    if head.startswith(b"%PDF-"):
        return Sniffed("pdf", mime_type="application/pdf")
    if head.startswith(codecs.BOM_UTF8):
        return Sniffed("text", "utf-8-sig")
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return Sniffed("text", "utf-32")
    if head.startswith(codecs.BOM_UTF16_LE):
        return Sniffed("text", "utf-16-le")
    if head.startswith(codecs.BOM_UTF16_BE):
        return Sniffed("text", "utf-16-be")
    if b"\x00" in head:
        return Sniffed("binary")
    try:
        try:
            head.decode("utf-8")  # the whole head is text (most files; no decoder to make)
        except UnicodeDecodeError:
            # final=False: the sniffed head may end in the middle of a character
            codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        # latin-1 maps every byte to one character, so an edit round-trips the bytes exactly
        return Sniffed("text", "latin-1")
    return Sniffed("text", "utf-8")


# What sniff may take for something else although it is valid UTF-8 without
# a NUL: magic numbers in ASCII, and the UTF-8 BOM (every other magic and BOM
# above holds a NUL or a byte that no UTF-8 text starts with).
_UTF8_LOOKALIKES = (b"GIF87a", b"GIF89a", b"RIFF", b"%PDF-", codecs.BOM_UTF8)
_LOOKALIKE_FIRSTS = frozenset(magic[0] for magic in _UTF8_LOOKALIKES)


def plain_utf8(data: bytes) -> str | None:
    """``data`` decoded, when ``sniff`` of its head says plain UTF-8 text
    (no BOM) and all of it is valid UTF-8; None when sniff must decide.

    For a small file read whole: one decode to know it is text and to show
    it (sniff decodes the head, the window the rest, and sniff's string
    compares cost as much again); a test holds it to what sniff says.
    """
    # (0 in data: a byte's value, which finds it with memchr; b"\x00" in data
    # takes the general substring search, four times the work. The first
    # byte before startswith: a tuple of five costs a third of the decode.)
    if not data or 0 in data or (data[0] in _LOOKALIKE_FIRSTS and data.startswith(_UTF8_LOOKALIKES)):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


_BOM_LEN = {"utf-8-sig": 3, "utf-16-le": 2, "utf-16-be": 2, "utf-32": 4}


@dataclass
class Window:
    """The lines shown and what was left out, so the result can say so."""

    first: int = 0
    last: int = 0
    more: bool = False
    cut_lines: int = 0
    capped: bool = False
    lines_in_file: int | None = None
    # Either the numbered lines, or (a small file's common case) them already
    # joined: splitting the text again is only for a caller that wants lines.
    _lines: list[str] | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The numbered lines shown (``"     7\tits text"``)."""
        if self._lines is None:
            self._lines = self._text.split("\n") if self._text else []
        return self._lines

    @property
    def text(self) -> str:
        """The numbered lines shown, one text."""
        if self._text is not None and self._lines is None:
            return self._text
        return "\n".join(self.lines)


def read_window(
    f: BinaryIO,
    encoding: str,
    *,
    offset: int,
    limit: int,
    max_line_chars: int,
    max_output_chars: int,
) -> Window:
    """Lines ``offset``..``offset+limit-1`` (1-based), numbered like ``cat -n``."""
    if encoding in ("utf-8", "utf-8-sig", "latin-1"):
        f.seek(_BOM_LEN.get(encoding, 0))
        return _window_bytes(f, encoding, offset, limit, max_line_chars, max_output_chars)
    f.seek(0)
    # utf-16/32: newlines are multi-byte, so let the codec split lines (rare, slower)
    text = io.TextIOWrapper(f, encoding="utf-16" if encoding.startswith("utf-16") else encoding,
                            errors="replace", newline="")
    try:
        return _window_text(text, offset, limit, max_line_chars, max_output_chars)
    finally:
        text.detach()


def _skip_lines(f: BinaryIO, count: int) -> int:
    """Skip ``count`` lines by counting newlines per chunk; returns how many were skipped."""
    skipped = 0
    while skipped < count:
        chunk = f.read(_CHUNK)
        if not chunk:
            return skipped
        found = chunk.count(b"\n")
        if skipped + found < count:
            skipped += found
            continue
        pos = -1
        for _ in range(count - skipped):
            pos = chunk.index(b"\n", pos + 1)
        f.seek(pos + 1 - len(chunk), io.SEEK_CUR)
        return count
    return skipped


def _read_line(f: BinaryIO, cap: int) -> tuple[bytes, int] | None:
    """One line, at most ``cap`` bytes of it kept; the rest is drained, not stored."""
    head = f.readline(cap)
    if not head:
        return None
    total = len(head)
    if len(head) == cap and not head.endswith(b"\n"):
        while True:
            rest = f.readline(_CHUNK)
            total += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
    return head, total


def _format(number: int, text: str, max_chars: int) -> tuple[str, bool]:
    text = text.rstrip("\r\n")
    cut = False
    if len(text) > max_chars:
        text = f"{text[:max_chars]}… [line cut at {max_chars} characters]"
        cut = True
    return f"{number:>6}\t{text}", cut


def _window_bytes(
    f: BinaryIO, encoding: str, offset: int, limit: int, max_line_chars: int, max_output_chars: int
) -> Window:
    win = Window(first=offset)
    skipped = _skip_lines(f, offset - 1)
    if skipped < offset - 1:
        win.lines_in_file = skipped
        return win
    decode = "utf-8" if encoding == "utf-8-sig" else encoding
    here = f.tell()
    left = f.seek(0, io.SEEK_END) - here
    f.seek(here)
    if left < _CHUNK:
        # The rest of the file fits in a chunk (most Reads): one read sized to
        # it (a 1 MiB buffer for 2 KB costs more than the read), one decode,
        # one split. One byte more than the size tells whether it grew since.
        rest = f.read(max(left, 0) + 1)
        if len(rest) <= left:
            return _window_in_memory(win, rest.decode(decode, errors="replace"), limit, max_line_chars,
                                     max_output_chars)
        f.seek(-len(rest), io.SEEK_CUR)
    cap = max_line_chars * 4 + 8  # enough bytes for max_line_chars characters of UTF-8
    number = _add_lines(win, _decoded_lines(f, decode, cap, limit), max_line_chars, max_output_chars)
    return _finish(win, number, more=win.capped or bool(f.read(1)))


def _decoded_lines(f: BinaryIO, decode: str, cap: int, count: int) -> Iterator[str]:
    for _ in range(count):
        got = _read_line(f, cap)
        if got is None:
            return
        yield got[0].decode(decode, errors="replace")


def _add_lines(win: Window, texts: Iterable[str], max_line_chars: int, max_output_chars: int) -> int:
    """Number ``texts`` from ``win.first`` on into ``win`` until the output
    cap (then ``win.capped``); the number of the first line not shown."""
    used = 0
    number = win.first
    for text in texts:
        line, cut = _format(number, text, max_line_chars)
        if used + len(line) + 1 > max_output_chars and win.lines:
            win.capped = True
            return number
        win.lines.append(line)
        win.cut_lines += cut
        used += len(line) + 1
        number += 1
    return number


# "\n     7\t": the newline that ends a line and the next line's number,
# so numbering is one join of prefix, line, prefix, line... (the first
# prefix without its newline). A list is never changed once made: a longer
# one replaces it, so a Read in a worker thread never sees one half made.
_PREFIXES: list[str] = []
_MAX_CACHED = 20_000


def _prefixes(first: int, count: int) -> list[str]:
    """The newline and ``cat -n``'s line-number column for lines
    ``first``..``first+count-1`` (formatting a number per line was most of
    a small Read's own cost)."""
    global _PREFIXES
    end = first - 1 + count
    if end > _MAX_CACHED:
        return [f"\n{n:>6}\t" for n in range(first, end + 1)]
    have = _PREFIXES
    if len(have) < end:
        have = _PREFIXES = have + [f"\n{n:>6}\t" for n in range(len(have) + 1, end + 1)]
    return have[first - 1 : end]


def _numbered(shown: list[str], text: str, first: int, max_line_chars: int, max_output_chars: int) -> str | None:
    """``shown`` (lines of ``text``, numbered from ``first`` on) as one text,
    when no line is cut and all of them fit in ``max_output_chars``; None
    otherwise (the line-by-line loop decides where to cut and stop)."""
    count = len(shown)
    # No line can be longer than the whole text, and the shown lines with
    # their prefixes and newlines take at most the text plus a prefix per line.
    if not count or (len(text) > max_line_chars and max(map(len, shown)) > max_line_chars):
        return None
    have, end = _PREFIXES, first - 1 + count  # (_prefixes's common case, without its call)
    prefixes = have[first - 1 : end] if end <= len(have) else _prefixes(first, count)
    if len(text) + len(prefixes[-1]) * count > max_output_chars and \
            sum(map(len, prefixes)) + sum(map(len, shown)) > max_output_chars:
        return None
    # one join of prefix, line, prefix, line... (no string made per line)
    parts = prefixes + shown
    parts[0::2] = prefixes
    parts[1::2] = shown
    parts[0] = prefixes[0][1:]
    return "".join(parts)


def _window_in_memory(win: Window, text: str, limit: int, max_line_chars: int, max_output_chars: int) -> Window:
    """The same window as the streaming loop, from the rest of a file already read.

    Decoding it whole gives the same characters as decoding it line by line: a
    newline is never part of a multi-byte UTF-8 sequence.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start one
    shown = lines[:limit] if len(lines) > limit else lines
    if "\r" in text:
        shown = [line.rstrip("\r") for line in shown]
    numbered = _numbered(shown, text, win.first, max_line_chars, max_output_chars)
    if numbered is not None:
        # no line cut and no cap: the common case, without the loop below
        win._text = numbered
        return _finish(win, win.first + len(shown), more=len(lines) > limit)
    number = _add_lines(win, lines[:limit], max_line_chars, max_output_chars)
    return _finish(win, number, more=win.capped or len(lines) > limit)


def window_of_text(text: str, *, limit: int, max_line_chars: int, max_output_chars: int) -> Window:
    """``read_window`` from line 1 of a whole file already decoded (the
    same window: read_window decodes a small file whole and goes here too)."""
    return _window_in_memory(Window(first=1), text, limit, max_line_chars, max_output_chars)


def whole_text_numbered(text: str, *, limit: int, max_line_chars: int, max_output_chars: int) -> str | None:
    """``window_of_text(...).text`` when that window is the whole file with
    nothing left out (every line shown, none cut, no cap: a Read then adds
    nothing to it); None otherwise, when the window says what it left out.
    A small Read's common case, without a ``Window``."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(lines) > limit:
        return None
    if "\r" in text:
        lines = [line.rstrip("\r") for line in lines]
    return _numbered(lines, text, 1, max_line_chars, max_output_chars)


def _window_text(
    text: io.TextIOWrapper, offset: int, limit: int, max_line_chars: int, max_output_chars: int
) -> Window:
    win = Window(first=offset)
    number = 0
    used = 0
    for number, raw in enumerate(text, start=1):
        if number < offset:
            continue
        if number >= offset + limit:
            return _finish(win, number, more=True)
        line, cut = _format(number, raw.lstrip("\ufeff") if number == 1 else raw, max_line_chars)
        if used + len(line) + 1 > max_output_chars and win.lines:
            win.capped = True
            return _finish(win, number, more=True)
        win.lines.append(line)
        win.cut_lines += cut
        used += len(line) + 1
    if number < offset:
        win.lines_in_file = number
        return win
    return _finish(win, number + 1, more=False)


def _finish(win: Window, next_number: int, *, more: bool) -> Window:
    win.last = next_number - 1
    win.more = more
    return win


# --- whole-file text for Edit and Write ------------------------------------------


@dataclass(frozen=True)
class Encoded:
    """A file's text and how to put it back byte-compatibly."""

    text: str
    encoding: str
    newline: Literal["\n", "\r\n"]


def decode_for_edit(data: bytes) -> Encoded | None:
    """Decode a whole file, remembering its encoding and dominant line ending.

    None for binary content, which Edit must not touch.
    """
    kind = sniff(data[:SNIFF_BYTES])
    if kind.kind == "empty":
        return Encoded("", "utf-8", "\n")
    if kind.kind != "text":
        return None
    codec = {"utf-16-le": "utf-16", "utf-16-be": "utf-16"}.get(kind.encoding, kind.encoding)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        if kind.encoding != "utf-8":
            return None
        # UTF-8 with a few stray bytes past the sniffed head: surrogateescape keeps the
        # valid characters matchable and writes the stray bytes back unchanged
        text = data.decode("utf-8", errors="surrogateescape")
    if codec == "utf-16":
        text = text.lstrip("\ufeff")
    crlf = text.count("\r\n")
    newline: Literal["\n", "\r\n"] = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
    return Encoded(text, kind.encoding, newline)


def encode_like(text: str, encoding: str) -> bytes:
    """Encode ``text`` the way the original file was (BOM included)."""
    if encoding == "utf-16-le":
        return codecs.BOM_UTF16_LE + text.encode("utf-16-le")
    if encoding == "utf-16-be":
        return codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    if encoding == "latin-1":
        try:
            return text.encode("latin-1")
        except UnicodeEncodeError:
            # the model added characters latin-1 cannot hold; UTF-8 keeps them all
            return text.encode("utf-8")
    if encoding == "utf-8":
        return text.encode("utf-8", errors="surrogateescape")
    return text.encode(encoding)

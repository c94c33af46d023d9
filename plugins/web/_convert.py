"""Turning a downloaded body into text the model can read.

HTML becomes Markdown through html-to-markdown (native code, imported here,
never by the plugin's ``__init__``), with a plain-text fallback for what it
cannot convert whole; other text passes through; anything else is binary and
is described rather than shown.
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._blocks import BlockScanner

__all__ = ["Opened", "PageText", "media_type", "open_and_read", "open_body"]

Kind = Literal["html", "text", "binary"]

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "image/svg+xml",
    }
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Elements whose content is never prose a reader would want. The converter
# already drops head, script, style, noscript and template; these it would
# render as links or base64 images.
_EXCLUDED = ("svg", "iframe", "object", "embed", "canvas")
# The plain-text fallback skips these (raw text, or invisible).
_DROP_TAGS = ("head", "script", "style", "noscript", "template", *_EXCLUDED)
# Each of these is an opening (a comment, a raw-text element's start tag, a
# <pre>) and the first closing after it. Found with a search per opening, as
# ``re.sub`` with a lazy ``.*?`` would, but remembering where a closing is
# absent: the regex scanned to the end of the page from every opening that is
# never closed, which was quadratic on a page of unclosed <pre>.
_PRESTRIP_OPEN = re.compile(r"<!--|<(script|style|svg|noscript|template)\b", re.IGNORECASE)
# A link inside <pre> would come out as Markdown link syntax in the middle of
# the code block (rustdoc and Sphinx link every type in a signature); the code
# reads right only with the text of the link.
_PRE_OPEN = re.compile(r"<pre\b", re.IGNORECASE)
_ANCHOR_TAG = re.compile(r"</?a\b[^>]*>", re.IGNORECASE)
_TITLE_OPEN = re.compile(r"<title\b", re.IGNORECASE)
_CLOSINGS: dict[str, re.Pattern[str]] = {
    name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in ("script", "style", "svg", "noscript", "template",
                                                                    "pre", "title")
}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)


class NotConverted(Exception):
    """The converter failed, or left out part of the page (nesting past its depth limit)."""


def media_type(content_type: str | None) -> tuple[str, str | None]:
    """``("text/html", "utf-8")`` from a Content-Type header value."""
    if not content_type:
        return "", None
    main, *params = content_type.split(";")
    charset = None
    for p in params:
        key, _, value = p.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return main.strip().lower(), charset


def _kind_for(mtype: str, body: bytes) -> Kind:
    head = body[:1024]
    if mtype in _HTML_TYPES:
        return "html"
    if mtype.startswith("text/") or mtype in _TEXT_TYPES or mtype.endswith(("+json", "+xml")):
        # A NUL byte in "text" means the header lies (or the file is UTF-16
        # without a BOM we could trust); showing it would be noise.
        return "binary" if b"\x00" in head else "text"
    if mtype in ("", "application/octet-stream"):
        # No usable type: sniff, as browsers do, but only for the safe verdicts.
        if b"\x00" in head:
            return "binary"
        lowered = head.lstrip().lower()
        if lowered.startswith((b"<!doctype html", b"<html")):
            return "html"
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A multi-byte character cut at the 1024-byte boundary is still text.
            if exc.start < len(head) - 3:
                return "binary"
        return "text"
    return "binary"


def _decode(body: bytes, charset: str | None, kind: Kind) -> str:
    candidates: list[str] = []
    if charset:
        candidates.append(charset)
    if kind == "html":
        m = _META_CHARSET.search(body[:4096])
        if m:
            candidates.append(m.group(1).decode("ascii", "replace"))
    if body.startswith(codecs.BOM_UTF8):
        candidates.insert(0, "utf-8-sig")
    candidates.append("utf-8")
    for name in candidates:
        try:
            codecs.lookup(name)
        except LookupError:
            continue
        return body.decode(name, errors="replace")
    return body.decode("utf-8", errors="replace")  # pragma: no cover - utf-8 always exists


def _options(base_url: str) -> Any:
    from html_to_markdown import ConversionOptions, PreprocessingOptions

    return ConversionOptions(
        heading_style="atx",
        bullets="-",
        compact_tables=True,
        # No escaping of _ and *: the reader is a model, and snake\_case noise
        # costs tokens while a stray emphasis marker costs nothing.
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
        # The title is read below; the YAML front matter this would add is noise.
        extract_metadata=False,
        # Off: with navigation and forms kept (a docs sidebar is often what the
        # prompt asks about) it changed nothing on the pages measured (docs,
        # a page with cookie banner, ads, share links) and cost up to 9%.
        preprocessing=PreprocessingOptions(enabled=False),
        # Text a reader can reach (an inactive tab, a collapsed <details>) stays.
        hidden_content="reachable",
        exclude_selectors=list(_EXCLUDED),
        # An image inline as a data: URL shows its alt text, not kilobytes of base64.
        inline_data_media="alt_text_only",
        base_url=base_url,
    )


def html_to_markdown(html: str, base_url: str) -> str:
    """Markdown of ``html`` (a page, or a piece of one cut by BlockScanner), links made absolute.

    Raises NotConverted when the converter fails or reports that it skipped
    part of the page, so the caller can fall back instead of showing less.
    """
    from html_to_markdown import convert as convert_html

    html = _sub_elements(html, _PRE_OPEN, lambda block: _ANCHOR_TAG.sub("", block), "pre",
                         tag_end=False)
    try:
        result = convert_html(html, _options(base_url))
    except Exception as exc:  # the binding's errors, and a Rust panic raised as PanicError
        raise NotConverted(f"the Markdown converter failed ({type(exc).__name__}: {exc})") from exc
    if any(str(w.kind).rsplit(".", 1)[-1].lower() == "depth_limit_exceeded" for w in result.warnings):
        raise NotConverted("it nests its elements too deeply for the Markdown converter")
    return (result.content or "").strip()


# Pieces of HTML are sized to what a read still needs, from the characters of
# HTML each character of Markdown took so far (at first a guess: documentation
# pages take 1.2-2); never smaller than this, and a page's last piece is never
# smaller than this either.
_MIN_PIECE_CHARS = 16_384
_FIRST_HTML_PER_CHAR = 1.3


class PageText:
    """A page's text, converted as far as it has been read.

    HTML is converted piece by piece (cut where BlockScanner finds it safe),
    only as far as a caller asks: WebFetch shows one window of a long page, and
    converting a whole megabyte to show its first 40,000 characters cost 95%
    of a call. What was converted never changes, so offsets stay exact.
    Thread-safe: a cached page may be read from several sessions' threads.
    """

    def __init__(self, known: str, html: str | None = None, base_url: str = "") -> None:
        self._known = known
        self._html = html
        self._scanner: BlockScanner | None = None
        self._base_url = base_url
        self._piece_start = 0
        self._piece_context = ""
        self._pieces = 0
        self._lock = threading.Lock()
        if html is not None:
            from ._blocks import BlockScanner

            self._scanner = BlockScanner(html, base_url)

    @classmethod
    def whole(cls, text: str) -> PageText:
        return cls(text)

    @classmethod
    def of_html(cls, html: str, base_url: str) -> PageText:
        return cls("", html, base_url)

    @property
    def known(self) -> str:
        """The text converted so far (all of it once ``complete``)."""
        return self._known

    @property
    def complete(self) -> bool:
        return self._scanner is None

    @property
    def cache_chars(self) -> int:
        """What the page holds in memory, in characters (the HTML is kept until all of it is converted)."""
        return len(self._known) + (len(self._html) if self._html is not None else 0)

    def needs(self, chars: int) -> bool:
        """Whether ``read(chars)`` would have to convert more (and should run in a thread)."""
        return self._scanner is not None and len(self._known) < chars

    def read(self, chars: int | None = None, stop: threading.Event | None = None) -> str:
        """The text, converted until it is at least ``chars`` long or complete. CPU-bound.

        ``stop`` set (the call's time limit passed, and the caller left)
        ends the conversion after the piece under way; what was converted
        stays, whole pieces only, for a later read to carry on from.
        """
        with self._lock:
            while self._scanner is not None and (chars is None or len(self._known) < chars):
                if stop is not None and stop.is_set():
                    break
                self._convert_next(chars)
            return self._known

    def _convert_next(self, chars: int | None) -> None:
        scanner, html = self._scanner, self._html
        assert scanner is not None and html is not None
        start = self._piece_start
        if chars is None:
            size = len(html)  # all the rest, in one piece
        else:
            per_char = start / len(self._known) if self._known else _FIRST_HTML_PER_CHAR
            size = max(_MIN_PIECE_CHARS, int((chars - len(self._known)) * per_char * 1.1))
        cut = scanner.next_cut(start + size)
        if cut is not None and scanner.end - cut < _MIN_PIECE_CHARS:
            cut = scanner.next_cut(scanner.end)  # too little left to be worth a piece: to the end
        end = scanner.end if cut is None else cut
        # The first piece holds the page's <base>, which the converter reads itself.
        base_url = self._base_url if start == 0 else scanner.base_url
        try:
            text = html_to_markdown(self._piece_context + html[start:end], base_url)
        except NotConverted as why:
            # The converter skips what lies past its depth limit (a hostile
            # or generated page): showing less than the page without saying
            # so is worse than showing all of it plainly. Plain text has no
            # depth limit; the rest of the page goes with this piece.
            end, cut = scanner.end, None
            plain, _ = _plain_text(html[start:end])
            what = "this page is" if start == 0 else "the rest of this page is"
            text = f"[WebFetch: {what} shown as plain text, not Markdown: {why}.]\n\n{plain}"
        if text:
            self._known = f"{self._known}\n\n{text}" if self._known else text
        self._pieces += 1
        self._piece_start = end
        self._piece_context = scanner.cut_context
        if cut is None:
            self._scanner = self._html = None


@dataclass(frozen=True)
class Opened:
    """A body classified and decoded, its text converted only as far as it is read."""

    kind: Kind
    text: PageText
    title: str | None = None


def open_body(body: bytes, content_type: str | None, url: str) -> Opened:
    """Classify and decode one body; HTML is converted later, as ``text.read`` asks."""
    mtype, charset = media_type(content_type)
    kind = _kind_for(mtype, body)
    if kind == "binary":
        return Opened("binary", PageText.whole(""))
    text = _decode(body, charset, kind)
    if kind == "html":
        return Opened("html", PageText.of_html(text, url), _title(text))
    return Opened("text", PageText.whole(text))


def open_and_read(body: bytes, content_type: str | None, url: str, chars: int,
                  stop: threading.Event | None = None) -> Opened:
    """``open_body``, with its first ``chars`` characters converted. Pure and CPU-bound: run it in a thread.

    The Markdown converter is native code and releases the GIL, so the other
    calls of a batch go on while a large page converts. ``stop``: as ``PageText.read``.
    """
    opened = open_body(body, content_type, url)
    opened.text.read(chars, stop)
    return opened


class _Closings:
    """Where the first closing after a place is, searching again only past the last one found."""

    def __init__(self, html: str) -> None:
        self.html = html
        self._known: dict[str, tuple[int, int, int]] = {}  # key -> (searched from, start or -1, end)

    def find(self, key: str, start: int) -> tuple[int, int]:
        """(start, end) of the first closing ``key`` at or after ``start``; (-1, -1) when there is none."""
        known = self._known.get(key)
        if known is not None and known[0] <= start and (known[1] < 0 or known[1] >= start):
            return known[1], known[2]
        if key == ">":
            at = self.html.find(">", start)
            found = (at, at + 1) if at >= 0 else (-1, -1)
        elif key == "-->":
            at = self.html.find("-->", start)
            found = (at, at + 3) if at >= 0 else (-1, -1)
        else:
            m = _CLOSINGS[key].search(self.html, start)
            found = (m.start(), m.end()) if m is not None else (-1, -1)
        self._known[key] = (start, *found)
        return found


def _element_spans(html: str, opening: re.Pattern[str], name: str | None = None,
                   tag_end: bool = True) -> Iterator[tuple[int, int, int]]:
    """(start, end of the start tag, end) of each element ``opening`` begins and its end tag ends, left to right,
    not overlapping: what ``<name\\b[^>]*>.*?</name\\s*>`` (or ``<!--.*?-->``) matches with ``re`` (DOTALL);
    without ``tag_end``, what ``<name\\b.*?</name\\s*>`` matches."""
    closings = _Closings(html)
    pos = 0
    for m in opening.finditer(html):
        if m.start() < pos:
            continue
        if m.group(0) == "<!--":
            close, after = closings.find("-->", m.end())
            if close >= 0:
                yield m.start(), m.end(), after
                pos = after
            continue
        if tag_end:
            found, past_tag = closings.find(">", m.end())
            if found < 0:
                return  # no ">" anywhere after: no element can begin from here on
        else:
            past_tag = m.end()
        key = name or m.group(1).lower()
        close, after = closings.find(key, past_tag)
        if close >= 0:
            yield m.start(), past_tag, after
            pos = after


def _sub_elements(html: str, opening: re.Pattern[str], replace: Callable[[str], str], name: str | None = None,
                  tag_end: bool = True) -> str:
    parts: list[str] = []
    pos = 0
    for start, _, end in _element_spans(html, opening, name, tag_end):
        parts += [html[pos:start], replace(html[start:end])]
        pos = end
    if not parts:
        return html
    parts.append(html[pos:])
    return "".join(parts)


def _title(html: str) -> str | None:
    import html as entities

    for _, inner, end in _element_spans(html, _TITLE_OPEN, "title"):
        close = _CLOSINGS["title"].search(html, inner, end)
        assert close is not None
        return " ".join(entities.unescape(html[inner:close.start()]).split()) or None
    return None


_BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article",
                     "header", "footer", "blockquote", "pre", "table", "ul", "ol", "dd", "dt"})


def _plain_text(html: str) -> tuple[str, str | None]:
    """Text of ``html`` without building a tree (no recursion, any depth)."""
    from html.parser import HTMLParser

    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.skip = 0
            self.in_title = False
            self.title: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in _DROP_TAGS and tag != "head":
                self.skip += 1
            elif tag == "title":
                self.in_title = True
            elif tag in _BLOCKS:
                self.parts.append("\n")

        def handle_endtag(self, tag: str) -> None:
            if tag in _DROP_TAGS and tag != "head":
                self.skip = max(0, self.skip - 1)
            elif tag == "title":
                self.in_title = False
            elif tag in _BLOCKS:
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            if self.in_title:
                self.title.append(data)
            elif not self.skip:
                self.parts.append(data)

    parser = _Text()
    parser.feed(_sub_elements(html, _PRESTRIP_OPEN, lambda _: " "))
    parser.close()
    text = re.sub(r"[ \t]+", " ", "".join(parser.parts))
    text = re.sub(r"\s*\n\s*", "\n", text)
    title = " ".join("".join(parser.title).split()) or None
    return text.strip(), title

"""Turning a downloaded body into text the model can read.

HTML becomes Markdown through markdownify (imported here, never by the
plugin's ``__init__``); other text passes through; anything else is binary
and is described rather than shown.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

__all__ = ["Converted", "convert", "media_type"]

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
# Elements whose content is never prose a reader would want.
_DROP_TAGS = ("head", "script", "style", "noscript", "template", "svg", "iframe", "object", "embed", "canvas")
# Raw-text and invisible blocks, removed before parsing: on real pages inline
# scripts, styles and SVG are often most of the bytes, and feeding them through
# html.parser and BeautifulSoup only to throw them away is the slowest part of
# a fetch. The tree pass below still drops anything this misses.
_PRESTRIP = re.compile(
    r"<!--.*?-->|<(script|style|svg|noscript|template)\b[^>]*>.*?</\1\s*>",
    re.IGNORECASE | re.DOTALL,
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class Converted:
    kind: Kind
    text: str
    title: str | None = None


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


def html_to_markdown(html: str, base_url: str) -> tuple[str, str | None]:
    """Markdown and the page title; links are made absolute so the model can fetch them."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(_PRESTRIP.sub(" ", html), "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if title_tag else None
    # One pass each (find_all with a list), not one per tag name: on a 1 MB
    # page every extra walk of the tree costs tens of milliseconds.
    for el in soup.find_all(list(_DROP_TAGS)):
        el.decompose()
    for el in soup.find_all(["a", "img"]):
        attr = "href" if el.name == "a" else "src"
        value = el.get(attr)
        if isinstance(value, str) and value and not value.startswith(("#", "data:", "javascript:")):
            try:
                el[attr] = urljoin(base_url, value)
            except ValueError:
                pass  # a malformed link is left as written rather than dropping the page
    # No escaping of _ and *: the reader is a model, and snake\_case noise costs
    # tokens while a stray emphasis marker costs nothing.
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", escape_misc=False, escape_underscores=False, escape_asterisks=False
    )
    text = converter.convert_soup(soup)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, title or None


def convert(body: bytes, content_type: str | None, url: str) -> Converted:
    """Classify and convert one body. Pure and CPU-bound: run it in a thread."""
    mtype, charset = media_type(content_type)
    kind = _kind_for(mtype, body)
    if kind == "binary":
        return Converted("binary", "")
    text = _decode(body, charset, kind)
    if kind == "html":
        try:
            markdown, title = html_to_markdown(text, url)
        except RecursionError:
            # BeautifulSoup and markdownify recurse once per nesting level; a
            # page of thousands of nested elements (hostile or generated)
            # would crash the call. Plain text still answers most prompts.
            plain, title = _plain_text(text)
            note = "[WebFetch: this page nests its elements too deeply to convert to Markdown; plain text follows.]"
            return Converted("html", f"{note}\n\n{plain}", title)
        return Converted("html", markdown, title)
    return Converted("text", text)


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
    parser.feed(_PRESTRIP.sub(" ", html))
    parser.close()
    text = re.sub(r"[ \t]+", " ", "".join(parser.parts))
    text = re.sub(r"\s*\n\s*", "\n", text)
    title = " ".join("".join(parser.title).split()) or None
    return text.strip(), title

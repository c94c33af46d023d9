"""Where a long HTML page may be cut so that each piece converts alone as it does in the whole.

WebFetch shows a window of a page's Markdown, so it converts a long page piece
by piece, only as far as the window asked for reaches. A cut is safe only
between blocks whose Markdown does not depend on what encloses them: before
the start tag of a block (a paragraph, heading, list, table...) while every
open element is a plain container (body, div, section, main...). Inside a
list, a table, a quote, a <pre>, a link or any element the scanner does not
know, it never cuts, and after markup it cannot follow (a formatting element
closed by another's end tag, which a parser may reopen later; an end tag that
skips a table cell) it stops cutting for the rest of the page: the rest then
converts in one piece, as the whole page used to.

The scanner also finds where a browser stops showing the page: after a
<script> or <style> that is never closed, everything is script.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urljoin

__all__ = ["BlockScanner"]

# One token at a "<": a comment, a bogus comment or doctype, or a tag (with
# attributes whose quoted values may hold ">"). Possessive quantifiers keep a
# tag that never ends from backtracking.
_TOKEN_TEMPLATE = (
    r"<(?:"
    r"(?P<comment>!--(?:>|->|.*?--!?>))"
    r"|(?P<open_comment>!--)"
    r"|(?P<bogus>[!?]|/(?![A-Za-z]))[^>]*+>"
    r"|(?P<end>/)?{skip}(?P<name>[A-Za-z][^\t\n\f\r />]*+)"
    r"(?P<attrs>(?:[^>\"'=]|=[\t\n\f\r ]*+(?:\"[^\"]*+\"|'[^']*+'|[^\t\n\f\r >]*+)|[\"'])*+)>"
    r")"
)
# Inline elements, void ones and the parts of lists and tables: inside a block
# (a paragraph, a list, a table), where no cut can fall, the scanner does not
# even stop at them. What it still sees there is what can end the block: its
# own end tag, a nested block, an end tag that skips over open elements.
_SKIPPABLE = frozenset({
    "li", "dt", "dd", "tr", "td", "th", "tbody", "thead", "tfoot", "caption", "colgroup", "option", "optgroup",
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins", "kbd",
    "mark", "nobr", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
    "img", "br", "wbr", "input", "label", "area", "col", "embed", "hr", "link", "meta", "param", "source", "track",
    "keygen",
})
_TOKEN = re.compile(_TOKEN_TEMPLATE.format(skip=""), re.DOTALL)
_BLOCK_TOKEN = re.compile(
    _TOKEN_TEMPLATE.format(skip=r"(?!(?i:" + "|".join(sorted(_SKIPPABLE)) + r")[\t\n\f\r />])"), re.DOTALL
)
# Elements that hold text: one left open in a block is carried into the next
# ones (a browser reopens the formatting ones; the converter keeps any of
# them open), so a cut after it would end it early.
_PAIRED_INLINE = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins", "kbd",
    "label", "mark", "nobr", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u",
    "var",
})
_PAIRED_INLINE_NAME = "(" + "|".join(sorted(_PAIRED_INLINE)) + r")(?=[\t\n\f\r />])"
_INLINE_OPEN = re.compile(r"<" + _PAIRED_INLINE_NAME, re.IGNORECASE)
_INLINE_CLOSE = re.compile(r"</" + _PAIRED_INLINE_NAME, re.IGNORECASE)
_PRE_START = re.compile(r"<pre[\t\n\f\r />]", re.IGNORECASE)
# Text or markup between two blocks (anything but blanks).
_NOT_BLANK = re.compile(r"[^\t\n\f\r ]")
_BASE_HREF = re.compile(r"""\bhref[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]+))""", re.IGNORECASE)
# Elements whose content is text up to their end tag, not markup.
_RAW_TEXT = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title"})
# Raw text a browser never shows: unclosed, it hides the rest of the page.
_HIDES_REST = frozenset({"script", "style"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr", "keygen"})
# Containers that add nothing to the Markdown of what they hold.
_PLAIN_CONTAINERS = frozenset({"html", "body", "div", "main", "section", "article", "header", "footer", "aside",
                               "nav"})
# Start tags a cut may precede: each begins a new Markdown block.
_BLOCK_STARTS = frozenset({"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "table", "pre",
                           "blockquote", "section", "article", "header", "footer", "aside", "nav", "main",
                           "figure", "hr", "details", "form", "fieldset", "address", "hgroup", "menu"})
# Elements an end tag may close on the way to its own (their end tag is optional).
_IMPLIED_END = frozenset({"p", "li", "dt", "dd", "option", "optgroup", "rb", "rp", "rt", "rtc"})
_TABLE_PARTS = frozenset({"tbody", "thead", "tfoot", "tr", "td", "th", "colgroup", "caption"})
# Markup inside these (SVG, MathML) closes itself with "/>", and their end tag closes all of it.
_FOREIGN = frozenset({"svg", "math"})
_TABLE_ENDS = frozenset({"table", "tbody", "thead", "tfoot", "tr"})
_RAW_END: dict[str, re.Pattern[str]] = {
    name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE) for name in _RAW_TEXT
}


class BlockScanner:
    """Walks one page forward, once, handing out safe cut positions.

    ``end`` is where the page's visible markup stops (its length, or the start
    of an unclosed <script> or <style>); ``base_url`` follows the page's
    <base href> once the scanner has passed it; ``cut_context`` is the start
    tags of the containers open at the last cut handed out, to put before the
    piece that begins there: their end tags in that piece then close what they
    close in the whole page (a paragraph left open, a heading), and still end
    a block between two runs of text.
    """

    def __init__(self, html: str, base_url: str) -> None:
        self.html = html
        self.end = len(html)
        self.base_url = base_url
        self._pos = 0
        self._stack: list[str] = []
        self._containers: list[str] = []  # the start tags of the open plain containers
        self.cut_context = ""
        self._enclosed = 0  # open elements that are not plain containers
        self._inline = 0  # open elements the block scan skips (an <a> at the top level)
        self._foreign = 0  # open <svg> and <math>
        self._block_from = -1  # where the enclosing block began, while one is open
        self._block_is_block = False  # whether that is a block (a paragraph), not inline (a link)
        # Where the last block, container tag or <hr> ended. A cut falls only
        # where nothing but blanks lies between there and the block it
        # precedes: text before an empty block (the converter writes nothing
        # for it) runs on into the text after it, which a cut would split.
        self._edge = 0
        self._can_cut = True
        self._seen_base = False
        # Where the next end tag of each name is, from the last search: the
        # scan moves forward only, so a search is made again only once the
        # scan has passed what it found. Searching from every block to the end
        # of the page was quadratic on a page of paragraphs that are never
        # closed (each search ran to the end and found nothing).
        self._next_close: dict[str, tuple[int, int]] = {}  # name -> (searched from, found or -1)
        self._next_end_tag: dict[str, tuple[int, int]] = {}  # the same, for the case-blind pattern
        # How many of each name are open (the stack, counted): a deep stack
        # searched at every end tag was quadratic too.
        self._open_names: dict[str, int] = {}
        self._text_after_edge = (-1, -1)  # (an edge, the first character after it that is not blank)

    def next_cut(self, not_before: int) -> int | None:
        """The first safe cut at or after ``not_before``, or None if the page ends first."""
        # The loop over tags is the scanner's whole cost (a tag every 10-40
        # characters), so inside a block, where no cut can fall, the regex
        # passes over inline tags itself. A stretch of tokens ends when that
        # changes, and after the text of a <script> or <style>.
        stack = self._stack
        while self._pos < self.end:
            in_block = self._enclosed > 0 and not self._inline
            pattern = _BLOCK_TOKEN if in_block else _TOKEN
            resume = -1
            for m in pattern.finditer(self.html, self._pos, self.end):
                end_slash, name, attrs = m.group("end", "name", "attrs")
                if name is None:
                    if m.group("open_comment"):
                        self._pos = self.end  # the rest of the page is a comment
                        return None
                    self._pass_between_blocks(m.start(), m.end())
                    continue
                kind = _KINDS.get(name)
                if kind is None:
                    name = name.lower()
                    kind = _KINDS.get(name, _OTHER)
                if end_slash:
                    if not self._is_open(name):
                        # A stray end tag: parsers differ on it (the converter's
                        # may match it to an element closed long before, or
                        # start a paragraph), so from here the rest converts whole.
                        self._can_cut = False
                        continue
                    self._close(name)
                    if not self._enclosed:
                        if self._block_from >= 0:
                            self._block_ended(m.end())
                        elif _KINDS.get(name, _OTHER) & _PLAIN:
                            self._pass_between_blocks(m.start(), m.end())
                    if in_block != (self._enclosed > 0 and not self._inline):
                        resume = m.end()
                        break
                    continue
                if kind & _VOIDED:
                    if kind & _RAW or name == "plaintext" or name == "base":
                        self._pos = m.end()
                        self._special(name, attrs, m.start())
                        self._pass_between_blocks(m.start(), self._pos)
                        resume = self._pos
                        break
                    if name == "hr" and not self._enclosed:
                        self._edge = m.end()
                    continue
                if self._foreign and attrs.endswith("/"):
                    continue  # self-closing, as <path/> in an <svg> is (in HTML, "/>" closes nothing)
                start = m.start()
                cut = (kind & _BLOCK and not self._enclosed and self._can_cut and start >= not_before
                       and self._blank_since_edge(start))
                if name == "p" and stack and stack[-1] == "p":
                    stack.pop()
                    self._open_names["p"] -= 1
                    self._enclosed -= 1
                if cut:
                    self.cut_context = "".join(self._containers)
                stack.append(name)
                self._open_names[name] = self._open_names.get(name, 0) + 1
                if kind & _PLAIN:
                    self._containers.append(self.html[start:m.end()])
                    self._pass_between_blocks(start, m.end())
                else:
                    if not self._enclosed:
                        self._block_from = start
                        self._block_is_block = bool(kind & _BLOCK)
                    self._enclosed += 1
                    if kind & _FOREIGN_KIND:
                        self._foreign += 1
                    if name in _SKIPPABLE:
                        self._inline += 1
                resume_at = m.end()
                if name == "pre":
                    # Code: thousands of highlighting spans, and no block can
                    # start inside. What it leaves open is still checked
                    # when it ends (_block_ended).
                    close = self._find_end_tag(name, resume_at)
                    # A <pre> inside it would make that end tag the inner one's.
                    if close >= 0 and _PRE_START.search(self.html, resume_at, close) is None:
                        resume_at = close
                elif self._enclosed == 1 and not self._inline and not self._foreign:
                    resume_at = self._past_simple_block(name, resume_at)
                if cut:
                    self._pos = resume_at
                    return start
                if resume_at != m.end() or in_block != (self._enclosed > 0 and not self._inline):
                    resume = resume_at
                    break
            self._pos = self.end if resume < 0 else resume
        return None

    def _past_simple_block(self, name: str, inside: int) -> int:
        """Where the scan goes on after a top-level block that holds only text and skippable tags.

        One search finds the block's end tag and one more checks that the
        scan would stop at nothing before it (the same pattern block mode
        uses): then the block is closed at once, as the scan would have
        closed it, and the scan jumps past it. Most blocks of a page are
        such (a paragraph, a heading, a list or table of plain items).
        """
        html = self.html
        close = self._find_close(name, inside)  # plain find: most pages are lower case
        if close < 0 or html[close + 2 + len(name): close + 3 + len(name)] not in _TAG_NAME_ENDS:
            return inside
        # A differently spelt end tag before it, a comment or any tag but a
        # skippable one, and the block is scanned tag by tag. The check stops
        # at the first such tag: the scan goes on from there anyway, so no
        # stretch of the page is checked twice.
        for tag in _REGION_TAG.finditer(html, inside, close):
            found = tag.group(1)
            if found is None or (found not in _SKIPPABLE and found.lower() not in _SKIPPABLE):
                return inside
        after = html.find(">", close, self.end)
        if after < 0:
            return inside
        self._close(name)
        self._block_ended(after + 1)
        return after + 1

    def _is_open(self, name: str) -> bool:
        return self._open_names.get(name, 0) > 0

    def _blank_since_edge(self, start: int) -> bool:
        """Whether nothing but blanks lies between the last edge and ``start``.

        The first character that is not blank after an edge is found once:
        with the edge kept in place (text after a block, then many containers)
        a search from the edge at every tag was quadratic in the blanks.
        """
        edge = self._edge
        if edge == start:
            return True
        if self._text_after_edge[0] != edge:
            found = _NOT_BLANK.search(self.html, edge, self.end)
            self._text_after_edge = (edge, self.end if found is None else found.start())
        return self._text_after_edge[1] >= start

    def _find_close(self, name: str, start: int) -> int:
        """``html.find("</" + name, start, end)``, searching again only past what the last search found."""
        known = self._next_close.get(name)
        if known is not None and known[0] <= start and (known[1] < 0 or known[1] >= start):
            found = known[1]
        else:
            found = self.html.find("</" + name, start, self.end)
            self._next_close[name] = (start, found)
        # The end only moves back (an unclosed <script> hides the rest), never forward.
        return found if found < 0 or found + 2 + len(name) <= self.end else -1

    def _find_end_tag(self, name: str, start: int) -> int:
        """Where ``_end_tag(name)`` first matches at or after ``start`` (-1: nowhere), remembered as ``_find_close``."""
        known = self._next_end_tag.get(name)
        if known is not None and known[0] <= start and (known[1] < 0 or known[1] >= start):
            found = known[1]
        else:
            match = _end_tag(name).search(self.html, start, self.end)
            found = -1 if match is None else match.start()
            self._next_end_tag[name] = (start, found)
        return found if found < 0 or found + 3 + len(name) <= self.end else -1

    def _block_ended(self, at: int) -> None:
        """A block closed: if it left an inline element open, cutting after it would end that early."""
        opened = _INLINE_OPEN.findall(self.html, self._block_from, at)
        if opened:
            closed = _INLINE_CLOSE.findall(self.html, self._block_from, at)
            if sorted(n.lower() for n in opened) != sorted(n.lower() for n in closed):
                self._can_cut = False
        self._block_from = -1
        if self._block_is_block:
            self._edge = at

    def _pass_between_blocks(self, start: int, end: int) -> None:
        """Markup between two blocks (a container's tag, a comment, a script) does not stop a cut after it."""
        if not self._enclosed and self._blank_since_edge(start):
            self._edge = end

    def _special(self, name: str, attrs: str, start: int) -> None:
        """Raw text (skipped to its end tag), <plaintext>, or <base>."""
        if name == "base":
            href = _BASE_HREF.search(attrs)
            if href is not None and not self._seen_base:
                self._seen_base = True
                value = next(v for v in href.groups() if v is not None)
                self.base_url = urljoin(self.base_url, value.strip())
            return
        close = _RAW_END[name].search(self.html, self._pos, self.end) if name in _RAW_END else None
        if close is None:
            if name in _HIDES_REST:
                self.end = start
            # Otherwise the rest is that element's text: one last piece.
            self._pos = self.end
            self._can_cut = False
            return
        after = self.html.find(">", close.end() - 1, self.end)
        self._pos = self.end if after < 0 else after + 1

    def _close(self, name: str) -> None:
        stack = self._stack
        # An inline element's end tag closes nothing on the way (a parser
        # ignores one that would close a paragraph opened inside it).
        allowed = (frozenset() if name in _PAIRED_INLINE
                   else _IMPLIED_END | (_TABLE_PARTS if name in _TABLE_ENDS else frozenset()))
        while True:
            top = stack.pop()
            self._open_names[top] -= 1
            kind = _KINDS.get(top, _OTHER)
            if kind & _PLAIN:
                self._containers.pop()
            else:
                self._enclosed -= 1
                if kind & _FOREIGN_KIND:
                    self._foreign -= 1
                if top in _SKIPPABLE:
                    self._inline -= 1
            if top == name:
                return
            if (top not in allowed or top == "p") and name not in _FOREIGN:
                # A parser may keep or reopen what this end tag skipped over
                # (the converter's keeps a paragraph open past the end of the
                # block around it, for a later </p> to close).
                self._can_cut = False


_OTHER, _PLAIN, _BLOCK, _VOIDED, _RAW, _FOREIGN_KIND = 0, 1, 2, 4, 8, 16
_KINDS: dict[str, int] = {}
for _name in _BLOCK_STARTS:
    _KINDS[_name] = _KINDS.get(_name, 0) | _BLOCK
for _name in _PLAIN_CONTAINERS:
    _KINDS[_name] = _KINDS.get(_name, 0) | _PLAIN
for _name in _VOID | {"plaintext"}:
    _KINDS[_name] = _VOIDED
for _name in _RAW_TEXT:
    _KINDS[_name] = _VOIDED | _RAW
for _name in _FOREIGN:
    _KINDS[_name] = _FOREIGN_KIND


# The names of the tags in a stretch ("" for a comment, a doctype or a bogus end tag).
_REGION_TAG = re.compile(r"<(?:/?([A-Za-z][^\t\n\f\r />]*)|[!?/])")
_TAG_NAME_ENDS = frozenset(("\t", "\n", "\f", "\r", " ", "/", ">"))


@lru_cache(maxsize=256)
def _end_tag(name: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(name)}[\t\n\f\r />]", re.IGNORECASE)

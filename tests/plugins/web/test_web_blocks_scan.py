"""WebFetch's block scan is linear in the page, and cuts where it always did (issue 30, item 1).

Before, each top-level block searched for its end tag from where it began to
the end of the page: on a page of paragraphs never closed, every search ran to
the end and found nothing (200 / 400 / 800 / 1,600 / 3,200 KB took 0.38 / 0.63 /
2.33 / 9.6 / 38 s). The scanner now remembers where it found an end tag, or
that there is none, and searches again only once it has passed that place.

The cost is counted, not timed: every search the scanner makes for an end tag
is measured in characters searched. The cuts are compared with the scanner as
it was before (kept below as the oracle).
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pegboard.plugins.web import _blocks
from pegboard.plugins.web._blocks import _NOT_BLANK, _REGION_TAG, _SKIPPABLE, _TAG_NAME_ENDS, BlockScanner, _end_tag
from pegboard.plugins.web._convert import PageText

pytestmark = [pytest.mark.timeout(120)]


class OldScanner(BlockScanner):
    """The scanner before the fix: every search from the block to the end of the page."""

    def _past_simple_block(self, name: str, inside: int) -> int:
        html = self.html
        close = html.find("</" + name, inside, self.end)
        if close < 0 or html[close + 2 + len(name): close + 3 + len(name)] not in _TAG_NAME_ENDS:
            return inside
        names = set(_REGION_TAG.findall(html, inside, close))
        if not names <= _SKIPPABLE and not {n.lower() for n in names} <= _SKIPPABLE:
            return inside
        after = html.find(">", close, self.end)
        if after < 0:
            return inside
        self._close(name)
        self._block_ended(after + 1)
        return after + 1

    def _find_end_tag(self, name: str, start: int) -> int:
        match = _end_tag(name).search(self.html, start, self.end)
        return -1 if match is None else match.start()

    def _is_open(self, name: str) -> bool:
        return name in self._stack

    def _blank_since_edge(self, start: int) -> bool:
        return self._edge == start or _NOT_BLANK.search(self.html, self._edge, start) is None


def trace(cls: type[BlockScanner], html: str, steps: list[int]) -> list[tuple[Any, ...]]:
    """Every cut handed out, asked at the given distances, with what a piece needs from the scan."""
    scanner = cls(html, "https://x.test/a/")
    out: list[tuple[Any, ...]] = []
    at, i = 0, 0
    for _ in range(len(html) + 2):  # a cut moves forward at least one character
        cut = scanner.next_cut(at + steps[i % len(steps)])
        i += 1
        # With the scan's own state: a block jumped over that the old scan walked through shows there.
        out.append((cut, scanner.cut_context, scanner.base_url, scanner.end, tuple(scanner._stack),
                    scanner._can_cut, scanner._edge, scanner._pos))
        if cut is None:
            return out
        at = cut + 1
    raise AssertionError("the scanner did not reach the end of the page")


# --- pages that were slow --------------------------------------------------------------------

def unclosed_paragraphs(kb: int) -> str:
    unit = "<p>Paragraph text with some <b>words</b> in it, and more words here.\n"
    return "<html><body>" + unit * (kb * 1024 // len(unit))


def bare_paragraphs(kb: int) -> str:
    return "<html><body>" + "<p>x" * (kb * 1024 // 4)


def unclosed_pre(kb: int) -> str:
    return "<html><body>" + "<pre>code line\n" * (kb * 1024 // 15)


def one_end_tag_at_the_end(kb: int) -> str:
    return unclosed_paragraphs(kb) + "</p></body></html>"


def blanks_then_containers(kb: int) -> str:
    # Text after a long run of blanks keeps the edge where the blanks begin, and every container after it
    # asked whether only blanks lay between.
    return "<html><body><p>a</p>" + " " * (kb * 512) + "x" + "<div></div>" * (kb * 512 // 11)


def deep_then_stray_end_tags(kb: int) -> str:
    return "<html><body>" + "<div>x" * (kb * 512 // 6) + "</x>" * (kb * 512 // 4)


WORST = {"unclosed <p> blocks": unclosed_paragraphs, "bare <p>x": bare_paragraphs, "unclosed <pre>": unclosed_pre,
         "one </p> at the end": one_end_tag_at_the_end, "blanks, then containers": blanks_then_containers,
         "deep, then stray end tags": deep_then_stray_end_tags}


class _Counted(str):
    """A page whose ``find`` adds up the characters each search went through."""

    searched = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        lo = 0 if start is None else start
        hi = len(self) if end is None else end
        found = super().find(sub, lo, hi)
        type(self).searched += (hi if found < 0 else found) - lo
        return found


class _CountedPattern:
    def __init__(self, pattern: re.Pattern[str], tally: list[int]) -> None:
        self.pattern, self.tally = pattern, tally

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match[str] | None:
        hi = len(text) if endpos is None else endpos
        match = self.pattern.search(text, pos, hi)
        self.tally[0] += (hi if match is None else match.start()) - pos
        return match


@pytest.mark.parametrize("make", list(WORST.values()), ids=list(WORST))
def test_the_scan_searches_each_character_a_bounded_number_of_times(
        make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tally = [0]
    real = _blocks._end_tag
    monkeypatch.setattr(_blocks, "_end_tag", lambda name: _CountedPattern(real(name), tally))
    monkeypatch.setattr(_blocks, "_NOT_BLANK", _CountedPattern(_blocks._NOT_BLANK, tally))
    _Counted.searched = 0
    html = _Counted(make(200))
    scanner = BlockScanner(html, "https://x.test/")
    while scanner.next_cut(0) is not None:
        pass
    # Linear: a few passes over the page. Before, it was about a pass per block (thousands).
    assert _Counted.searched + tally[0] <= 4 * len(html), (_Counted.searched, tally[0], len(html))


@pytest.mark.slow
@pytest.mark.parametrize("make", list(WORST.values()), ids=list(WORST))
def test_worst_pages_cut_and_convert_as_before(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    html = make(24)
    for steps in ([0], [1], [5000], [16_384]):
        assert trace(BlockScanner, html, steps) == trace(OldScanner, html, steps)
    new = PageText.of_html(html, "https://x.test/").read()
    monkeypatch.setattr(_blocks, "BlockScanner", OldScanner)
    assert PageText.of_html(html, "https://x.test/").read() == new


@pytest.mark.slow
def test_the_known_pages_cut_as_before() -> None:
    from test_web_convert import _CUT_HAZARDS, DOC_PAGE, _random_page

    pages = [DOC_PAGE.decode(), *(f"<html><body>{b}</body></html>" for b in _CUT_HAZARDS.values())]
    pages += [_random_page(random.Random(seed)) for seed in range(60)]
    for html in pages:
        for steps in ([0], [1], [37, 400], [3000]):
            assert trace(BlockScanner, html, steps) == trace(OldScanner, html, steps), html[:200]


def test_a_long_page_read_in_windows_is_the_same_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    parts = []
    for i in range(3000):
        roll = rng.random()
        parts.append(f"<p>para {i} <a href='p{i}.html'>link</a>" + ("</p>" if roll < 0.6 else "")
                     if roll < 0.8 else f"<pre>code {i}" + ("</pre>" if roll < 0.9 else "")
                     if roll < 0.95 else f"<div><h2>h {i}</h2></div>")
    html = "<html><body>" + "\n".join(parts) + "</body></html>"

    def windows() -> list[str]:
        page = PageText.of_html(html, "https://x.test/")
        return [page.read(n) for n in (1000, 30_000, 90_000, None)]  # type: ignore[list-item]

    new = windows()
    monkeypatch.setattr(_blocks, "BlockScanner", OldScanner)
    assert windows() == new


# --- fuzzed: the new scan against the old -----------------------------------------------------

_NAMES = ["p", "P", "div", "pre", "PRE", "b", "a", "li", "ul", "table", "td", "tr", "h1", "section", "span", "svg",
          "script", "style", "textarea", "base", "hr", "br", "blockquote", "code", "x-y"]
_FRAGMENT = st.one_of(
    st.sampled_from(_NAMES).map(lambda n: f"<{n}>"),
    st.sampled_from(_NAMES).map(lambda n: f"</{n}>"),
    st.sampled_from(["text", "more words", " ", "\n", "<!-- c -->", "<!--", "<!doctype html>", "</>", "<?x?>",
                     "<p class='a>b'>", "<base href='https://cdn.example/d/'>", "<br/>", "<path/>", "</p", "<p",
                     "</pre", "<a href=x>", "&amp;", ">", "<"]),
)


# Top-level blocks, mostly closed, holding a few fragments: the scan jumps over
# a block only at the top level, so that is where the pages must often be.
_BLOCK = st.tuples(st.sampled_from(_NAMES), st.lists(_FRAGMENT, max_size=6),
                   st.sampled_from(["closed", "closed", "closed", "open", "upper"]))


def _page(blocks: list[tuple[str, list[str], str]]) -> str:
    out = ["<html><body>"]
    for name, inner, end in blocks:
        out.append(f"<{name}>" + "".join(inner) + {"closed": f"</{name}>", "open": "", "upper": f"</{name.upper()}>"}[end])
    return "".join(out)


@settings(derandomize=True, max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_BLOCK, max_size=25),
       steps=st.lists(st.integers(min_value=0, max_value=300), min_size=1, max_size=4))
def test_fuzzed_pages_cut_as_the_old_scan_did(blocks: list[tuple[str, list[str], str]], steps: list[int]) -> None:
    html = _page(blocks)
    new = trace(BlockScanner, html, steps)
    assert new == trace(OldScanner, html, steps)
    cuts = [c for c, *_ in new if c is not None]
    assert cuts == sorted(set(cuts)) and all(html.startswith("<", c) for c in cuts)


# --- the converter's own passes over the page: linear, and matching what the regexes matched ---------

from pegboard.plugins.web import _convert  # noqa: E402

OLD_PRESTRIP = re.compile(r"<!--.*?-->|<(script|style|svg|noscript|template)\b[^>]*>.*?</\1\s*>",
                          re.IGNORECASE | re.DOTALL)
OLD_PRE_BLOCK = re.compile(r"<pre\b.*?</pre\s*>", re.IGNORECASE | re.DOTALL)
OLD_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def old_title(html: str) -> str | None:
    import html as entities

    m = OLD_TITLE.search(html)
    return None if m is None else " ".join(entities.unescape(m.group(1)).split()) or None


def unlink(block: str) -> str:
    return _convert._ANCHOR_TAG.sub("", block)


_PASS_FRAGMENT = st.sampled_from([
    "<pre>", "<PRE class=x>", "<pre", "</pre>", "</PRE >", "</pre", "<a href=y>", "</a>", "<title>", "</title>",
    "<TITLE x=1>", "<!--", "-->", "<!-- c -->", "<script>", "</script>", "<Style>", "</STYLE>", "<svg>", "</svg>",
    "<template>", "</template>", "<noscript>", "</noscript >", ">", "<", "text", "\n", "<prefix>", "<scripts>"])


@settings(derandomize=True, max_examples=200, deadline=None)
@given(fragments=st.lists(_PASS_FRAGMENT, max_size=40))
def test_fuzzed_pages_get_the_same_passes_as_the_regexes_gave(fragments: list[str]) -> None:
    html = "".join(fragments)
    assert _convert._sub_elements(html, _convert._PRE_OPEN, unlink, "pre", tag_end=False) == \
        OLD_PRE_BLOCK.sub(lambda m: unlink(m.group(0)), html)
    assert _convert._sub_elements(html, _convert._PRESTRIP_OPEN, lambda _: " ") == OLD_PRESTRIP.sub(" ", html)
    assert _convert._title(html) == old_title(html)


@pytest.mark.parametrize("opening", ["<pre>", "<!--", "<script>", "<svg>", "<title>", "<pre"])
def test_the_converters_passes_search_each_character_a_bounded_number_of_times(
        opening: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tally = [0]
    closings = {k: _CountedPattern(v, tally) for k, v in _convert._CLOSINGS.items()}
    monkeypatch.setattr(_convert, "_CLOSINGS", closings)
    _Counted.searched = 0
    html = _Counted((opening + "some text\n") * 20_000)
    _convert._sub_elements(html, _convert._PRE_OPEN, unlink, "pre", tag_end=False)
    _convert._sub_elements(html, _convert._PRESTRIP_OPEN, lambda _: " ")
    _convert._title(html)
    assert _Counted.searched + tally[0] <= 6 * len(html), (_Counted.searched, tally[0], len(html))

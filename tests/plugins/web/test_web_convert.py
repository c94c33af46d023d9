"""WebFetch's HTML to Markdown: what a documentation page keeps, and the plain-text fallback."""

from __future__ import annotations

import random
import re

import pytest

from pegboard.plugins.web import _convert
from _web_whole import convert

DOC_PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Widgets &amp; Gadgets - Docs</title>
<link rel="stylesheet" href="/s.css"><script>window.tracking = 1</script></head><body>
<nav class="sidebar"><ul><li><a href="install.html">Install</a></li><li><a href="api/widget.html">Widget API</a></li></ul></nav>
<main><h1>Widgets</h1><p>A <code>Widget</code> holds <em>one</em> value; see <a href="../guide/values.html#kinds">value kinds</a>.</p>
<h2 id="usage">Usage</h2>
<pre class="language-python"><code class="language-python">from widgets import Widget
w = Widget(size=3)
print(w.size)</code></pre>
<pre class="rust"><code>pub fn make(n: <a href="struct.Size.html">Size</a>) -&gt; <a href="struct.Widget.html">Widget</a></code></pre>
<table><thead><tr><th>option</th><th>default</th></tr></thead><tbody><tr><td>size</td><td>1</td></tr><tr><td>colour</td><td>red</td></tr></tbody></table>
<ol><li>first step<ul><li>nested detail</li></ul></li><li>second step</li></ol>
<div role="tabpanel" id="tab-linux">pip install widgets</div>
<div role="tabpanel" id="tab-windows" hidden>py -m pip install widgets</div>
<img src="img/diagram.png" alt="how widgets connect"><img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" alt="tiny dot">
<svg viewBox="0 0 10 10"><title>icon</title><path d="M0 0h10v10z"/></svg>
<iframe src="https://ads.example/frame">iframe fallback</iframe>
<form><label>Search the docs <input name="q"></label></form>
</main></body></html>"""


def test_a_documentation_page_keeps_its_structure_and_absolute_links() -> None:
    out = convert(DOC_PAGE, "text/html; charset=utf-8", "https://docs.example/en/latest/widgets.html")
    assert out.kind == "html" and out.title == "Widgets & Gadgets - Docs"
    text = out.text
    assert text.splitlines()[0].startswith("- [Install](https://docs.example/en/latest/install.html)")
    assert "[Widget API](https://docs.example/en/latest/api/widget.html)" in text
    assert "# Widgets" in text and "## Usage" in text
    assert "A `Widget` holds *one* value; see [value kinds](https://docs.example/en/guide/values.html#kinds)." in text
    assert "```python\nfrom widgets import Widget\nw = Widget(size=3)\nprint(w.size)\n```" in text
    assert "| option | default |\n| --- | --- |\n| size | 1 |\n| colour | red |" in text
    assert "1. first step\n   - nested detail\n2. second step" in text
    assert "![how widgets connect](https://docs.example/en/latest/img/diagram.png)" in text
    assert "Search the docs" in text
    for gone in ("tracking", "s.css", "M0 0h10v10z", "ads.example", "iframe fallback"):
        assert gone not in text


def test_code_in_pre_keeps_the_text_of_its_links_not_link_syntax() -> None:
    text = convert(DOC_PAGE, "text/html", "https://docs.example/x/").text
    assert "pub fn make(n: Size) -> Widget" in text
    assert "struct.Size.html" not in text


def test_hidden_text_a_reader_can_reach_is_kept() -> None:
    # An inactive tab is hidden until clicked; a page that hides its body
    # until a script runs would otherwise come back empty.
    text = convert(DOC_PAGE, "text/html", "https://docs.example/x/").text
    assert "pip install widgets" in text and "py -m pip install widgets" in text
    hidden_body = b"<html><body style='display:none'><div hidden><p>all of the article</p></div></body></html>"
    assert "all of the article" in convert(hidden_body, "text/html", "https://x.test/").text


def test_inline_data_images_show_their_alt_text_not_base64() -> None:
    text = convert(DOC_PAGE, "text/html", "https://docs.example/x/").text
    assert "tiny dot" in text
    assert "base64" not in text and "iVBORw0KGgo" not in text


def _nested(depth: int) -> bytes:
    return (b"<html><head><title>Deep</title></head><body><p>top</p>" + b"<div>" * depth
            + b"<p>deep <b>text</b></p>" + b"</div>" * depth + b"<p>bottom</p></body></html>")


def test_a_page_nested_500_deep_is_still_markdown() -> None:
    out = convert(_nested(500), "text/html", "https://x.test/")
    assert "plain text" not in out.text
    assert "deep **text**" in out.text and "top" in out.text and "bottom" in out.text


@pytest.mark.parametrize("depth", [1500, 20_000])
def test_text_past_the_converters_depth_limit_is_not_lost(depth: int) -> None:
    # html-to-markdown skips what lies past its depth limit (1,024) and says so
    # only in a warning: WebFetch notices and shows the whole page as plain text.
    out = convert(_nested(depth), "text/html", "https://x.test/")
    assert out.kind == "html" and out.title == "Deep"
    assert out.text.startswith("[WebFetch: this page is shown as plain text, not Markdown: it nests its elements too deeply")
    assert "deep text" in out.text and "top" in out.text and "bottom" in out.text


def test_a_converter_failure_falls_back_to_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import html_to_markdown

    def broken(html: str, options: object = None) -> object:
        raise html_to_markdown.ConversionError("simulated")

    monkeypatch.setattr(html_to_markdown, "convert", broken)
    out = convert(b"<html><body><h1>Title</h1><p>still here</p></body></html>", "text/html", "https://x.test/")
    assert "the Markdown converter failed (ConversionError: simulated)" in out.text
    assert "Title\nstill here" in out.text


def test_an_unclosed_script_hides_the_rest_of_the_page_as_a_browser_does() -> None:
    out = convert(b"<p>shown</p><script>var a = '<p>not text</p>';", "text/html", "https://x.test/").text
    assert out == "shown"
    # Only <script> itself hides the rest, not an element whose name begins with it.
    assert "after" in convert(b"<p>a</p><scripts>b</scripts><p>after</p>", "text/html", "https://x.test/").text


# --- long pages, converted in pieces ---------------------------------------------------------

from pegboard.plugins.web._blocks import BlockScanner  # noqa: E402
from pegboard.plugins.web._convert import PageText  # noqa: E402


def _cuts(html: str) -> list[int]:
    scanner, cuts = BlockScanner(html, "https://x.test/"), []
    while (cut := scanner.next_cut(0)) is not None:
        cuts.append(cut)
    return cuts


def test_pieces_are_cut_only_between_blocks_of_plain_containers() -> None:
    html = ("<html><body><div><p>one</p><ul><li>a</li><li><p>inside a list</p></li></ul>"
            "<table><tr><td><p>in a cell</p></td></tr></table><blockquote><p>quoted</p></blockquote>"
            "<a href='x'><p>a block in a link</p></a><pre><p>not a tag</p></pre><p>two</p></div></body></html>")
    cut_at = [html[c:c + 12] for c in _cuts(html)]
    # Not before the <pre>: what precedes it, a link, is inline (the converter
    # would run its text on into an empty block after it).
    assert cut_at == ["<div><p>one<", "<p>one</p><u", "<ul><li>a</l", "<table><tr><", "<blockquote>", "<p>two</p></"]


def test_no_cuts_after_a_formatting_element_left_open_or_an_end_tag_that_skips_a_cell() -> None:
    # The converter (like a browser) carries an unclosed <b> into the next paragraphs.
    assert _cuts("<body><p><b>bold</p><p>still bold</p><p>and this</p></body>") == [6]
    assert _cuts("<body><div><table><tr><td></div><p>x</p><p>y</p></body>") == [6, 11]


def test_an_unclosed_script_ends_the_page_and_raw_text_hides_no_cut() -> None:
    html = "<body><p>a</p><script>if (x) '<p>no</p>'</script><p>b</p><style>p{}</style><p>c</p><script>var s='<p>"
    scanner = BlockScanner(html, "https://x.test/")
    cuts = []
    while (cut := scanner.next_cut(0)) is not None:
        cuts.append(html[cut:cut + 6])
    assert cuts == ["<p>a</", "<p>b</", "<p>c</"]
    assert scanner.end == html.rindex("<script>")


def test_a_page_read_in_pieces_matches_the_whole_and_follows_its_base() -> None:
    head = "<html><head><base href='https://cdn.example/docs/'><title>t</title></head><body>"
    body = "".join(f"<p>para {i} <a href='p{i}.html'>link {i}</a></p>" for i in range(4000))
    html = head + body + "</body></html>"
    page = PageText.of_html(html, "https://x.test/dir/page")
    first = page.read(1000)
    assert not page.complete and 1000 <= len(first) < 40_000
    whole = page.read()
    assert page.complete and whole.startswith(first)
    assert "[link 3999](https://cdn.example/docs/p3999.html)" in whole
    assert whole == convert(html.encode(), "text/html", "https://x.test/dir/page").text


def test_a_deep_part_later_in_a_long_page_is_shown_as_plain_text_not_lost() -> None:
    html = ("<html><body>" + "<p>plain paragraph text</p>" * 3000 + "<div>" * 1500 + "<p>deep <b>words</b></p>"
            + "</div>" * 1500 + "<p>the last paragraph</p></body></html>")
    page = PageText.of_html(html, "https://x.test/")
    first = page.read(1000)
    assert "plain text" not in first and "plain paragraph text" in first
    whole = page.read()
    assert "[WebFetch: the rest of this page is shown as plain text, not Markdown: it nests its elements" in whole
    assert "deep words" in whole and "the last paragraph" in whole


# --- pieces against the whole page, on the markup that broke them ----------------------------

# Each was found by converting random pages both ways; converted in pieces, each
# came out different from the whole page before the scanner handled it.
_CUT_HAZARDS = {
    # Containers open at a cut are put before the next piece, so their end tags
    # still end a block ("more text" and the image) and close what they close
    # in the whole page (the heading that </section> ends).
    "a container's end tag between two runs of text": (
        "<header><aside><details>zeta delta</details>more text</aside><img src='i.png' alt='pic'>"
        "<strong>bold</strong><figure></figure></header><p>end</p>"),
    "an end tag that closes a heading left open": (
        "<section><h1>title<form>in a form</form><ul><li>item</li></ul></section><ul><li>after</li></ul><p>end</p>"),
    # The converter writes nothing for an empty block, so text on both sides runs on.
    "text before an empty block": "<footer><abbr>one two</abbr> three four<section></section> five six</footer><hr>",
    # Any inline element left open (not only b, i, a...) is carried into the next blocks.
    "an inline element left open in a block": (
        "<footer><form><kbd>key text<hr></form><article><figure>beta alpha<ul><li>epsilon</li></ul></figure>"
        "</article></footer>"),
    # </kbd> cannot close the <p> opened inside it: both stay open.
    "an inline end tag over a paragraph": "<footer><kbd><p>kbd para</kbd>gamma<details>det</details><h2>heading</h2></footer>",
    # The first </pre> is the inner one's: the table is still code.
    "a <pre> inside a <pre>": (
        "<pre><wbr><pre><wbr></pre><table><thead><tr><th>h</th></tr></thead><tr><td><strong>x</strong></td></tr>"
        "</table>"),
}


def _in_pieces(html: str, step: int = 1) -> PageText:
    page = PageText.of_html(html, "https://x.test/a/b")
    chars = step
    while not page.complete:
        page.read(chars)
        chars += step
    return page


@pytest.mark.parametrize("body", list(_CUT_HAZARDS.values()), ids=list(_CUT_HAZARDS))
def test_a_page_cut_at_every_safe_place_converts_as_the_whole(monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    monkeypatch.setattr(_convert, "_MIN_PIECE_CHARS", 1)
    html = f"<html><body>{body}</body></html>"
    whole = PageText.of_html(html, "https://x.test/a/b").read()
    page = _in_pieces(html)
    assert page.read() == whole
    assert page._pieces >= 2  # it was cut, so this held the scanner to something


def test_a_paragraph_closed_by_another_end_tag_ends_the_cutting() -> None:
    # The converter keeps such a paragraph open, and a </p> much later closes
    # it (a list after it becomes loose); cut before that list, it would not.
    html = "<body><p>a</p><div><p>b</div><ul><li></p>x</li><li>y</li></ul><p>c</p></body>"
    assert [html[c:c + 6] for c in _cuts(html)] == ["<p>a</", "<div><", "<p>b</"]  # none before the <ul>


def test_a_stray_end_tag_ends_the_cutting() -> None:
    # Parsers differ on one (the converter's may pair a stray </p> with a
    # paragraph closed long before): the rest of the page is one piece.
    html = "<body><p>a</p><p>b</p></p><p>c</p><div>d</div></body>"
    assert [html[c:c + 6] for c in _cuts(html)] == ["<p>a</", "<p>b</"]


def _random_page(rng: random.Random) -> str:
    """A page of nested blocks, lists, tables and inline markup, some of it left open, with
    comments and scripts; no stray end tags (on those, parsers disagree: see above)."""
    words = ["alpha", "beta", "gamma_delta", "*star*", "a&amp;b", "&lt;lt&gt;", "3.14", "\n  epsilon"]
    blocks = ["p", "div", "h1", "h2", "ul", "ol", "table", "pre", "blockquote", "section", "article", "header",
              "footer", "aside", "nav", "main", "figure", "hr", "details", "form", "dl", "address"]
    inline = ["a", "b", "i", "em", "strong", "code", "span", "small", "s", "kbd", "q", "sub"]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 5)))

    def inlines(depth: int) -> str:
        out = []
        for _ in range(rng.randint(0, 3)):
            roll = rng.random()
            if roll < 0.4 or depth > 3:
                out.append(text())
            elif roll < 0.8:
                tag = rng.choice(inline)
                href = f" href='r/{rng.randint(0, 9)}.html'" if tag == "a" else ""
                end = "" if rng.random() < 0.05 else f"</{tag}>"
                out.append(f"<{tag}{href}>{inlines(depth + 1)}{end}")
            else:
                out.append(rng.choice(["<br>", "<img src='i.png' alt='pic'>", "<!-- c -->", "<p>",
                                       "<script>x='<p>'</script>"]))
        return "".join(out)

    def block(depth: int) -> str:
        tag = rng.choice(blocks)
        if tag == "hr":
            return "<hr>"
        if tag in ("ul", "ol"):
            inner = "".join(f"<li>{inlines(depth)}{block(depth + 1) if rng.random() < 0.2 and depth < 4 else ''}</li>"
                            for _ in range(rng.randint(1, 3)))
        elif tag == "dl":
            inner = f"<dt>{inlines(depth)}</dt><dd>{inlines(depth)}</dd>"
        elif tag == "table":
            inner = "".join("<tr>" + f"<td>{inlines(depth)}</td>" * rng.randint(1, 3) + "</tr>"
                            for _ in range(rng.randint(1, 3)))
        elif tag in ("p", "h1", "h2", "pre", "address"):
            inner = inlines(depth)
        else:
            inner = "".join(block(depth + 1) if depth < 5 and rng.random() < 0.7 else inlines(depth)
                            for _ in range(rng.randint(0, 4)))
        end = "" if rng.random() < 0.03 else f"</{tag}>"
        return f"<{tag}>{inner}{end}"

    base = "<base href='https://cdn.example/d/'>" if rng.random() < 0.3 else ""
    return f"<html><head><title>t</title>{base}</head><body>" + "".join(block(0) for _ in range(rng.randint(5, 40)))


def _visible_letters(markdown: str) -> str:
    return re.sub(r"[^A-Za-z]+", "", re.sub(r"\]\([^)]*\)", "", markdown))


@pytest.mark.slow
def test_random_pages_in_pieces_show_all_the_text_of_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the converter itself keeps state across blocks (a blank line before
    # a quote, the marker of a second ordered list) pieces may differ in layout;
    # the text, its order and its links' text are the same.
    monkeypatch.setattr(_convert, "_MIN_PIECE_CHARS", 1)
    for seed in range(150):
        rng = random.Random(seed)
        html = _random_page(rng)
        whole = PageText.of_html(html, "https://x.test/a/b").read()
        page = _in_pieces(html, step=rng.randint(1, 200))
        assert _visible_letters(page.read()) == _visible_letters(whole), f"seed {seed}"

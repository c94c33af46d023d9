"""WebFetch's HTML to Markdown: what a documentation page keeps, and the plain-text fallback."""

from __future__ import annotations

import pytest

from pegboard.plugins.web import _convert
from pegboard.plugins.web._convert import convert

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
    assert _convert._cut_unterminated_raw_text("<p>a</p><scripts>b</scripts>") == "<p>a</p><scripts>b</scripts>"

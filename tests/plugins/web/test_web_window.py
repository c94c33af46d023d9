"""A long page's first WebFetch result is inline: the window fits the session's result limit (issue 35, item 4).

The window was 40,000 characters and the session's result limit 30,000, so
the first result of every long page was saved to a file and the model saw its
first 2,000 characters. Through a real session, against a page on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_web_support import Server, html_page, serve  # noqa: F401  (fixtures are used by name)

from pegboard import Toolbox
from pegboard.plugins.web._cache import shared_cache

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

LONG = "".join(f"<p>Paragraph {i}: a sentence of the long page, with words enough to fill it.</p>"
               for i in range(3000))


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    shared_cache(900, 64).clear()


def load(tmp_path: Path, extra: str = "") -> Toolbox:
    cfg = tmp_path / "web.toml"
    cfg.write_text('[permissions]\nallow = ["WebFetch(domain:127.0.0.1)"]\n' + extra, encoding="utf-8")
    return Toolbox.load(cwd=tmp_path, plugins=["web"], config=cfg)


@pytest.mark.parametrize("extra, limit", [("", 30_000), ("[results]\nmax_chars = 12000\n", 12_000)],
                         ids=["default limit", "a smaller limit"])
async def test_the_first_result_of_a_long_page_is_inline_and_the_next_window_follows_on(
        tmp_path: Path, serve: Callable[..., Server], extra: str, limit: int) -> None:
    srv = serve({"/": html_page("Long", LONG)})
    async with load(tmp_path, extra).session() as session:
        first = await session.call("WebFetch", {"url": srv.url("/"), "prompt": "what is on it?"})
        text = first.text_content()
        assert not first.is_error, text[:500]
        assert "over the" not in text and "saved in" not in text  # not spilled to a file
        assert len(first.content[0].text) <= limit  # the tool's own text (the pipeline's notes come after)
        assert "Paragraph 0:" in text and "----- end of page text -----" in text
        assert "window_chars is 40,000; the window is kept inside the session's result limit" in text
        offset = int(text.split("call WebFetch again with offset=")[1].split(" ")[0])
        assert offset > limit - 2_000  # the window is most of the result, not a sliver of it
        second = await session.call("WebFetch", {"url": srv.url("/"), "prompt": "and then?", "offset": offset})
    more = second.text_content()
    assert not second.is_error and "over the" not in more and len(second.content[0].text) <= limit
    # The two windows join: the second starts where the first stopped.
    window_one = text.split("----- page text -----\n")[1].split("\n----- end of page text -----")[0]
    window_two = more.split("----- page text -----\n")[1].split("\n----- end of page text -----")[0]
    assert len(window_one) == offset and window_two[:40] not in window_one


async def test_a_window_already_inside_the_limit_is_left_as_configured(
        tmp_path: Path, serve: Callable[..., Server]) -> None:
    srv = serve({"/": html_page("Long", LONG)})
    async with load(tmp_path, "[plugins.web]\nwindow_chars = 5000\n").session() as session:
        text = (await session.call("WebFetch", {"url": srv.url("/"), "prompt": "p"})).text_content()
    assert "at most 5,000 characters of page text." in text and "offset=5000 " in text

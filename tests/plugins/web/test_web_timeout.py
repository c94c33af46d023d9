"""WebFetch's time limit covers the conversion as well as the download (issue 30, item 1).

The conversion ran in a worker thread outside ``timeout_s``: a 3,200 KB page
that took 38 s to convert came back with ``timeout_s = 30``. Now a conversion
past the limit is abandoned, its thread's result dropped, and the model told.
The converter is slowed here by hand (a real page slow enough would make the
test as slow); the page is served from 127.0.0.1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from test_web_support import Server, serve, static  # noqa: F401  (fixtures are used by name)

from pegboard.plugins.web import _convert
from pegboard.plugins.web._cache import PageCache
from pegboard.plugins.web._models import WebConfig, WebFetchInput
from pegboard.plugins.web._webfetch import run_fetch

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

LOCAL = [SimpleNamespace(tool="WebFetch", specifier="domain:127.0.0.1", behavior="allow", source="/cfg/config.toml")]
PAGE = "<html><body>" + "".join(f"<div><p>paragraph {i} of a long page</p></div>\n" for i in range(4000)) + \
    "</body></html>"


async def go(url: str, config: WebConfig, cache: PageCache, offset: int = 0) -> Any:
    return await run_fetch(WebFetchInput(url=url, prompt="what?", offset=offset), config, rules=LOCAL, cache=cache)


class SlowConverter:
    """The real converter, each piece after ``seconds`` of waiting; counts the pieces it finished."""

    def __init__(self, seconds: float, blank: bool = False) -> None:
        self.seconds, self.pieces, self.real = seconds, 0, _convert.html_to_markdown
        self.blank = blank  # every piece converts to nothing, so the page never has enough text
        self.release = threading.Event()  # set: the waits end at once

    def __call__(self, html: str, base_url: str) -> str:
        self.release.wait(self.seconds)
        out = "" if self.blank else self.real(html, base_url)
        self.pieces += 1
        return out

    def settled(self) -> int:
        """The pieces finished once the worker thread has stopped converting (bounded wait)."""
        last, same_since = -1, time.monotonic()
        for _ in range(400):
            if self.pieces != last:
                last, same_since = self.pieces, time.monotonic()
            elif time.monotonic() - same_since > 3 * self.seconds + 0.5:
                break
            time.sleep(0.05)
        return last


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., SlowConverter]]:
    made: list[SlowConverter] = []

    def make(seconds: float, blank: bool = False) -> SlowConverter:
        converter = SlowConverter(seconds, blank)
        monkeypatch.setattr(_convert, "html_to_markdown", converter)
        made.append(converter)
        return converter

    yield make
    for converter in made:
        converter.release.set()  # no thread left waiting after the test


@pytest.mark.slow
async def test_a_conversion_past_the_time_limit_is_abandoned_and_the_model_told(
        serve: Callable[..., Server], slow: Callable[..., SlowConverter]) -> None:
    srv = serve({"/": static(PAGE, "text/html; charset=utf-8")})
    converter = slow(20.0)
    result = await go(srv.url("/"), WebConfig(timeout_s=0.5), PageCache())
    text = result.text_content()
    assert result.is_error, text[:500]
    assert converter.pieces == 0  # the answer came while the first piece was still converting
    assert "converting it to text did not finish within 0.5 s" in text
    assert "WebFetch's time limit for the whole call (download and conversion)" in text
    assert "The conversion was abandoned and nothing was kept" in text


@pytest.mark.slow
async def test_the_abandoned_thread_stops_after_the_piece_under_way(
        serve: Callable[..., Server], slow: Callable[..., SlowConverter],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_convert, "_MIN_PIECE_CHARS", 2000)
    srv = serve({"/": static(PAGE, "text/html; charset=utf-8")})
    # Pieces that come out empty: the conversion goes on piece after piece (about 60 of
    # them, sized for a 2,000-character window), each slow.
    converter = slow(0.3, blank=True)
    cache = PageCache()
    result = await go(srv.url("/"), WebConfig(timeout_s=0.5, window_chars=2000), cache)
    assert result.is_error and "did not finish within 0.5 s" in result.text_content()
    # Told to stop, the thread converts at most the piece it was in.
    assert converter.settled() <= 4
    assert cache.get(srv.url("/")) is None  # nothing half-converted is cached


@pytest.mark.slow
async def test_a_later_window_of_a_cached_page_keeps_to_the_time_limit(
        serve: Callable[..., Server], slow: Callable[..., SlowConverter]) -> None:
    srv = serve({"/": static(PAGE, "text/html; charset=utf-8")})
    cache = PageCache()
    config = WebConfig(timeout_s=0.5, window_chars=5000)
    first = await go(srv.url("/"), config, cache)
    assert not first.is_error and "the page goes on" in first.text_content()
    slow(20.0)
    later = await go(srv.url("/"), config, cache, offset=100_000)
    text = later.text_content()
    assert later.is_error and "did not finish within 0.5 s" in text
    assert "what was converted before stays cached for the next call" in text


async def test_a_conversion_within_the_limit_is_unchanged(
        serve: Callable[..., Server], slow: Callable[..., SlowConverter]) -> None:
    srv = serve({"/": static(PAGE, "text/html; charset=utf-8")})
    slow(0.01)
    result = await go(srv.url("/"), WebConfig(timeout_s=30), PageCache())
    assert not result.is_error and "paragraph 0 of a long page" in result.text_content()

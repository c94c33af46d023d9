"""WebFetch end to end against real HTTP servers on 127.0.0.1 (through ``run_fetch``).

The success paths need an explicit unlock (``WebFetch(domain:127.0.0.1)``),
since loopback is exactly what WebFetch refuses by default.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from test_web_support import (  # noqa: F401  (fixtures are used by name)
    RecordingBackend,
    Server,
    Trap,
    endless,
    gzip_bomb,
    html_page,
    loopback_only,
    make_tls,
    redirect_to,
    resolver_from,
    serve,
    static,
    trap,
    trickle,
)

from pegboard.plugins.web._cache import PageCache
from pegboard.plugins.web._models import WebConfig, WebFetchInput
from pegboard.plugins.web._webfetch import run_fetch

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]



def allow(*hosts: str) -> list[Any]:
    return [SimpleNamespace(tool="WebFetch", specifier=f"domain:{h}", behavior="allow", source="/cfg/config.toml")
            for h in hosts]


LOCAL = allow("127.0.0.1")


async def go(url: str, *, rules: list[Any] | None = None, prompt: str = "what is it?", offset: int = 0,
             cache: PageCache | None = None, **kw: Any) -> Any:
    config = kw.pop("config", None) or WebConfig()
    return await run_fetch(WebFetchInput(url=url, prompt=prompt, offset=offset), config,
                           rules=LOCAL if rules is None else rules,
                           cache=cache if cache is not None else PageCache(), **kw)


# --- pages ---------------------------------------------------------------------------------


async def test_html_page_comes_back_as_markdown_with_caps_stated(serve: Callable[..., Server]) -> None:
    srv = serve({"/": html_page("Hello page", "<h1>Welcome</h1><p>Read <a href='/docs'>the docs</a>.</p>")})
    result = await go(srv.url("/"), prompt="what is the heading?")
    text = result.text_content()
    assert not result.is_error, text
    assert "Title: Hello page" in text
    assert "# Welcome" in text
    assert f"[the docs](http://127.0.0.1:{srv.port}/docs)" in text
    assert "alert(" not in text and "color: red" not in text
    assert "No model summarised this page" in text and "'what is the heading?'" in text
    assert "Limits: downloads stop at 5,000,000 bytes and 30 s" in text
    assert "at most 40,000 characters" in text
    assert srv.requests[0][2]["host"] == f"127.0.0.1:{srv.port}"
    assert srv.requests[0][2]["user-agent"].startswith("pegboard-webfetch")


async def test_plain_text_and_json_pass_through(serve: Callable[..., Server]) -> None:
    srv = serve({"/t": static("line one\n*not markdown*\n", "text/plain"),
                 "/j": static('{"k": [1, 2]}', "application/json")})
    assert "line one\n*not markdown*" in (await go(srv.url("/t"))).text_content()
    assert '{"k": [1, 2]}' in (await go(srv.url("/j"))).text_content()


async def test_binary_content_is_described_not_shown(serve: Callable[..., Server]) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200
    srv = serve({"/img": static(png, "image/png"), "/blob": static(b"\x00\x01\x02" * 50, "application/octet-stream")})
    result = await go(srv.url("/img"))
    assert result.is_error and "image/png (208 bytes)" in result.text_content()
    assert "not text" in result.text_content()
    result = await go(srv.url("/blob"))
    assert result.is_error and "not text" in result.text_content()


async def test_http_errors_are_reported_with_the_status(serve: Callable[..., Server]) -> None:
    srv = serve({"/gone": static("<p>This page has moved away</p>", "text/html", status=410)})
    result = await go(srv.url("/gone"))
    assert result.is_error
    assert "HTTP 410" in result.text_content() and "moved away" in result.text_content()
    result = await go(srv.url("/missing"))
    assert result.is_error and "HTTP 404" in result.text_content()


async def test_long_page_is_windowed_and_offset_continues(serve: Callable[..., Server]) -> None:
    body = "".join(f"line {i:04d}\n" for i in range(400))  # 4,000 characters
    srv = serve({"/long": static(body, "text/plain")})
    config = WebConfig(window_chars=1000)
    cache = PageCache()
    first = (await go(srv.url("/long"), config=config, cache=cache)).text_content()
    assert "line 0099" in first and "line 0100" not in first
    assert "characters 0–1,000 of 4,000" in first and "offset=1000" in first
    second = (await go(srv.url("/long"), config=config, cache=cache, offset=1000)).text_content()
    assert "line 0100" in second and "line 0000" not in second and "offset=2000" in second
    last = (await go(srv.url("/long"), config=config, cache=cache, offset=3500)).text_content()
    assert "line 0399" in last and "(the end)" in last
    past = await go(srv.url("/long"), config=config, cache=cache, offset=4000)
    assert past.is_error and "past the end" in past.text_content()
    assert srv.hits("/long") == 1  # the later windows came from the cache


def _long_html(sections: int) -> str:
    parts = [f"<section><h2>Section {i}</h2><p>Text {i} with <a href='page/{i}'>a relative link</a> and "
             f"<b>bold</b>.</p><ul><li>item {i}a</li><li>item {i}b</li></ul>"
             f"<table><tr><th>key</th></tr><tr><td>row {i}</td></tr></table></section>" for i in range(sections)]
    return "<!doctype html><html><head><title>Long</title></head><body><main>" + "".join(parts) + "</main></body></html>"


@pytest.mark.slow
async def test_a_long_html_page_is_converted_only_as_far_as_it_is_read(serve: Callable[..., Server]) -> None:
    from _web_whole import convert

    html = _long_html(3000)  # about 600 KB of HTML
    srv = serve({"/long": static(html, "text/html; charset=utf-8")})
    whole = convert(html.encode(), "text/html", srv.url("/long")).text
    config = WebConfig(window_chars=40_000)
    cache = PageCache()
    first = (await go(srv.url("/long"), config=config, cache=cache)).text_content()
    # Honest about what it does not know yet: the total is not stated as if it were.
    assert "converted as far as it is read" in first and "and the page goes on" in first
    assert "This shows characters 0–40,000 of the" in first and "converted so far" in first
    assert "call WebFetch again with offset=40000" in first
    assert f"{len(whole):,} characters" not in first
    page = cache.get(srv.url("/long"))
    assert page is not None and not page.text.complete and len(page.text.known) < len(whole) / 4
    # Each later window converts as far as it needs and matches the whole page exactly.
    windows, offset = [], 0
    while True:
        text = (await go(srv.url("/long"), config=config, cache=cache, offset=offset)).text_content()
        window = text.split("----- page text -----\n", 1)[1].rsplit("\n----- end of page text -----", 1)[0]
        windows.append(window)
        if "(the end)" in text:
            break
        offset = int(text.split("call WebFetch again with offset=", 1)[1].split(" ", 1)[0])
    assert "".join(windows) == whole
    assert page.text.complete and f"of {len(whole):,} (the end)" in text
    assert f"[a relative link](http://127.0.0.1:{srv.port}/page/2999)" in whole  # links absolute in every piece
    past = await go(srv.url("/long"), config=config, cache=cache, offset=len(whole))
    assert past.is_error and f"its text has {len(whole):,} characters" in past.text_content()
    assert srv.hits("/long") == 1


@pytest.mark.slow
async def test_an_offset_far_into_an_unread_page_converts_far_enough_to_serve_it(
        serve: Callable[..., Server]) -> None:
    from _web_whole import convert

    html = _long_html(3000)
    srv = serve({"/long": static(html, "text/html; charset=utf-8")})
    whole = convert(html.encode(), "text/html", srv.url("/long")).text
    config = WebConfig(window_chars=10_000)
    text = (await go(srv.url("/long"), config=config, offset=200_000)).text_content()
    window = text.split("----- page text -----\n", 1)[1].rsplit("\n----- end of page text -----", 1)[0]
    assert window == whole[200_000:210_000]
    beyond = await go(srv.url("/long"), config=config, offset=len(whole) + 5)
    assert beyond.is_error and "past the end" in beyond.text_content()


# --- caps ----------------------------------------------------------------------------------


async def test_huge_response_stops_at_the_byte_cap(serve: Callable[..., Server]) -> None:
    srv = serve({"/big": static(b"x" * 3_000_000, "text/plain"), "/endless": endless(b"y" * 65536)})
    config = WebConfig(max_bytes=100_000)
    text = (await go(srv.url("/big"), config=config)).text_content()
    assert "Fetched 100,000 bytes" in text and "stopped at the 100,000-byte cap" in text
    # A body that never ends is cut the same way instead of being read forever.
    text = (await go(srv.url("/endless"), config=config)).text_content()
    assert "Fetched 100,000 bytes" in text and "stopped at the 100,000-byte cap" in text


async def test_byte_cap_counts_decompressed_bytes(serve: Callable[..., Server]) -> None:
    srv = serve({"/bomb": gzip_bomb(20_000_000)})  # ~20 KB on the wire, 20 MB unpacked
    text = (await go(srv.url("/bomb"), config=WebConfig(max_bytes=50_000))).text_content()
    assert "Fetched 50,000 bytes" in text and "cap" in text


async def test_page_exactly_at_the_cap_is_not_called_truncated(serve: Callable[..., Server]) -> None:
    srv = serve({"/exact": static(b"z" * 2048, "text/plain")})
    text = (await go(srv.url("/exact"), config=WebConfig(max_bytes=2048))).text_content()
    assert "Fetched 2,048 bytes" in text and "cap:" not in text


@pytest.mark.slow
async def test_slow_response_hits_the_time_limit(serve: Callable[..., Server]) -> None:
    srv = serve({"/slow": trickle()})
    result = await go(srv.url("/slow"), config=WebConfig(timeout_s=0.5))
    assert result.is_error
    assert "Timed out" in result.text_content() and "0.5 s" in result.text_content()


# --- redirects -------------------------------------------------------------------------------


async def test_same_host_redirects_are_followed(serve: Callable[..., Server]) -> None:
    srv = serve({"/a": redirect_to("/b", 301), "/b": redirect_to(lambda h: h.owner.url("/page"), 307),
                 "/page": html_page("Landing", "<p>arrived</p>")})
    text = (await go(srv.url("/a"))).text_content()
    assert "arrived" in text
    assert f"URL: {srv.url('/page')}" in text and "Followed 2 redirect(s)" in text
    assert [p for _, p, _ in srv.requests] == ["/a", "/b", "/page"]


async def test_redirect_loops_stop_after_the_hop_limit(serve: Callable[..., Server]) -> None:
    srv = serve({"/loop": redirect_to("/loop")})
    result = await go(srv.url("/loop"), config=WebConfig(max_redirects=3))
    assert result.is_error and "more than 3 times" in result.text_content()
    assert srv.hits("/loop") == 4


async def test_redirect_to_another_host_is_reported_not_followed(
    serve: Callable[..., Server], trap: Trap
) -> None:
    target = f"http://localhost:{trap.port}/secret"
    srv = serve({"/go": redirect_to(target)})
    result = await go(srv.url("/go"), rules=allow("127.0.0.1", "localhost"))
    text = result.text_content()
    assert not result.is_error
    assert "redirects (HTTP 302) to a different host" in text and target in text
    assert not trap.touched()


async def test_redirect_to_metadata_address_is_reported_not_followed(serve: Callable[..., Server]) -> None:
    srv = serve({"/meta": redirect_to("http://169.254.169.254/latest/meta-data/")})
    text = (await go(srv.url("/meta"))).text_content()
    assert "to a different host" in text and "169.254.169.254" in text


async def test_redirect_to_a_refused_url_is_an_error(serve: Callable[..., Server]) -> None:
    srv = serve({"/file": redirect_to("file:///etc/passwd"), "/creds": redirect_to("http://u:p@127.0.0.1/")})
    result = await go(srv.url("/file"))
    assert result.is_error and "Only http and https" in result.text_content()
    result = await go(srv.url("/creds"))
    assert result.is_error and "user name or password" in result.text_content()


async def test_each_redirect_hop_is_checked_again_for_spelling(serve: Callable[..., Server], trap: Trap) -> None:
    # Same "host" to a naive comparison after inet_aton, but a refused spelling.
    srv = serve({"/odd": redirect_to(f"http://2130706433:{trap.port}/")})
    result = await go(srv.url("/odd"))
    assert result.is_error and "non-standard spelling" in result.text_content()
    assert not trap.touched()


# --- the cache -------------------------------------------------------------------------------


async def test_second_fetch_is_a_cache_hit(serve: Callable[..., Server]) -> None:
    srv = serve({"/c": html_page("Cached", "<p>once</p>")})
    cache = PageCache()
    first = (await go(srv.url("/c"), cache=cache)).text_content()
    second = (await go(srv.url("/c#frag"), cache=cache, prompt="another question")).text_content()
    assert "served from cache" not in first
    assert "served from cache (pages are kept 15 min)" in second and "once" in second
    assert srv.hits("/c") == 1


async def test_cache_is_keyed_by_final_url(serve: Callable[..., Server]) -> None:
    srv = serve({"/old": redirect_to("/new"), "/new": static("final text", "text/plain")})
    cache = PageCache()
    await go(srv.url("/old"), cache=cache)
    text = (await go(srv.url("/new"), cache=cache)).text_content()
    assert "served from cache" in text and "final text" in text
    assert srv.hits("/new") == 1


async def test_errors_are_not_cached(serve: Callable[..., Server]) -> None:
    srv = serve({"/e": static("boom", "text/plain", status=503)})
    cache = PageCache()
    await go(srv.url("/e"), cache=cache)
    await go(srv.url("/e"), cache=cache)
    assert srv.hits("/e") == 2


async def test_a_cached_page_is_not_served_to_a_caller_without_the_unlock(serve: Callable[..., Server]) -> None:
    srv = serve({"/private": static("internal only", "text/plain")})
    cache = PageCache()
    assert "internal only" in (await go(srv.url("/private"), cache=cache)).text_content()
    result = await go(srv.url("/private"), cache=cache, rules=[])
    assert result.is_error and "loopback" in result.text_content()
    assert "internal only" not in result.text_content()


# --- the summariser hook ----------------------------------------------------------------------


async def test_host_summariser_answers_instead_of_the_page(serve: Callable[..., Server]) -> None:
    srv = serve({"/s": html_page("S", "<p>The answer is 42.</p>")})
    seen: dict[str, str] = {}

    def summarize(prompt: str, content: str, url: str) -> str:
        seen.update(prompt=prompt, content=content, url=url)
        return "It says 42."

    text = (await go(srv.url("/s"), prompt="what is the answer?", summarizer=summarize)).text_content()
    assert "It says 42." in text and "A model answered" in text
    assert "----- page text -----" not in text
    assert seen["prompt"] == "what is the answer?" and "The answer is 42." in seen["content"]
    assert seen["url"] == srv.url("/s")


async def test_summariser_may_be_async_or_a_plain_hook_list(serve: Callable[..., Server]) -> None:
    srv = serve({"/s": static("body", "text/plain")})

    async def answer() -> str:
        return "async answer"

    text = (await go(srv.url("/s"), summarizer=lambda **kw: answer())).text_content()
    assert "async answer" in text
    text = (await go(srv.url("/s"), summarizer=lambda **kw: [None, "listed answer"])).text_content()
    assert "listed answer" in text


async def test_summariser_that_declines_or_fails_falls_back_to_the_page(serve: Callable[..., Server]) -> None:
    srv = serve({"/s": static("the page body", "text/plain")})
    text = (await go(srv.url("/s"), summarizer=lambda **kw: None)).text_content()
    assert "No model summarised" in text and "the page body" in text

    def broken(**kw: Any) -> str:
        raise RuntimeError("model offline")

    text = (await go(srv.url("/s"), summarizer=broken)).text_content()
    assert "summariser failed (RuntimeError: model offline)" in text and "the page body" in text


# --- Host header, SNI and the address actually dialled ------------------------------------------


async def test_name_is_resolved_once_and_the_vetted_address_dialled(serve: Callable[..., Server]) -> None:
    srv = serve({"/": static("via the vetted address", "text/plain")})
    resolver = resolver_from({"site.localhost": ["127.0.0.1"]})
    result = await go(f"http://site.localhost:{srv.port}/", rules=allow("site.localhost"), resolver=resolver)
    assert "via the vetted address" in result.text_content()
    assert srv.requests[0][2]["host"] == f"site.localhost:{srv.port}"


async def test_tls_keeps_sni_and_certificate_check_on_the_name(serve: Callable[..., Server]) -> None:
    server_ctx, client_ctx = make_tls("pegboard.test")
    srv = serve({"/": static("over tls", "text/plain")}, tls=server_ctx)
    resolver = resolver_from({"pegboard.test": ["127.0.0.1"]})
    # http:// is upgraded to https:// for a non-loopback name.
    result = await go(f"http://pegboard.test:{srv.port}/", rules=allow("pegboard.test"), resolver=resolver,
                      verify=client_ctx)
    text = result.text_content()
    assert not result.is_error, text
    assert "over tls" in text and "upgraded to https" in text
    assert srv.sni == ["pegboard.test"]
    assert srv.requests[0][2]["host"] == f"pegboard.test:{srv.port}"


async def test_tls_certificate_for_another_name_is_rejected(serve: Callable[..., Server]) -> None:
    server_ctx, client_ctx = make_tls("other.test")
    srv = serve({"/": static("should not be read", "text/plain")}, tls=server_ctx)
    resolver = resolver_from({"pegboard.test": ["127.0.0.1"]})
    result = await go(f"https://pegboard.test:{srv.port}/", rules=allow("pegboard.test"), resolver=resolver,
                      verify=client_ctx)
    assert result.is_error and "TLS failed" in result.text_content()
    assert srv.hits() == 0


async def test_unresolvable_names_are_reported() -> None:
    result = await go("https://nowhere.test/", rules=[], resolver=resolver_from({}))
    assert result.is_error and "Could not resolve nowhere.test" in result.text_content()


async def test_connection_refused_is_reported(trap: Trap) -> None:
    port = trap.port
    trap.sock.close()  # nothing listens there now
    result = await go(f"http://127.0.0.1:{port}/")
    assert result.is_error and f"Could not connect to 127.0.0.1:{port}" in result.text_content()


async def test_ipv6_loopback_literal_works_when_unlocked(serve: Callable[..., Server]) -> None:
    import socket

    srv = serve({"/": static("over ipv6", "text/plain")}, family=socket.AF_INET6)
    url = f"http://[::1]:{srv.port}/"
    result = await go(url, rules=allow("[::1]"))
    assert "over ipv6" in result.text_content(), result.text_content()
    refused = await go(url, rules=[])
    assert refused.is_error and "loopback" in refused.text_content()
    assert srv.hits() == 1

"""WebFetch's memory stays bounded by ``max_bytes`` whatever the content coding (issue 29).

A reply of a few kilobytes sent as ``Content-Encoding: gzip, gzip`` took
WebFetch to 1.6 GB: httpx decoded the inner layer whole before the byte cap
saw a byte. The bombs here are served from 127.0.0.1 and fetched in a fresh
interpreter whose peak RSS is measured around the one call.
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys
import textwrap
import zlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from test_web_support import Handler, Server, serve, static  # noqa: F401  (fixtures are used by name)

from pegboard.plugins.web._cache import PageCache
from pegboard.plugins.web._models import WebConfig, WebFetchInput
from pegboard.plugins.web._webfetch import run_fetch

pytestmark = [pytest.mark.timeout(120)]

_MB = 1 << 20
# Peak RSS growth allowed for one fetch with the default 5,000,000-byte cap:
# the capped body and its copies, with room to spare. Before the fix the
# double bomb grew the process by about 2,000 MB and the single one by about
# 90 MB (httpx inflated each 64 KB read whole, then the cap cut it).
_BOUND_MB = 64


def gzip_of_zeros(megabytes: int) -> bytes:
    """One gzip member holding ``megabytes`` MiB of zeros, made without ever holding them:
    after a full flush the compressor's output for the same input is the same bytes."""
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    chunk = bytes(_MB)
    piece = raw.compress(chunk) + raw.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(chunk, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + piece * megabytes + raw.flush(zlib.Z_FINISH) + struct.pack(
        "<II", crc, (megabytes * _MB) & 0xFFFFFFFF)


@pytest.fixture(scope="module")
def one_gb_gzip() -> bytes:
    return gzip_of_zeros(1024)  # about 1 MB


def encoded(payload: bytes, coding: str, ctype: str = "text/plain") -> Callable[[Handler], None]:
    def route(h: Handler) -> None:
        h.send_text(200, payload, ctype, {"Content-Encoding": coding})

    return route


_MEASURE = textwrap.dedent("""
    import asyncio, json, resource, sys
    from types import SimpleNamespace
    from pegboard.plugins.web._cache import PageCache
    from pegboard.plugins.web._models import WebConfig, WebFetchInput
    from pegboard.plugins.web._webfetch import run_fetch

    # A guard for the machine, far above the bound the test asserts.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    rules = [SimpleNamespace(tool="WebFetch", specifier="domain:127.0.0.1", behavior="allow",
                             source="/cfg/config.toml")]

    async def go(url):
        return await run_fetch(WebFetchInput(url=url, prompt="what is it?"), WebConfig(cache_ttl_s=0),
                               rules=rules, cache=PageCache())

    asyncio.run(go(sys.argv[1]))  # every import and thread made before the measured call
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        result = asyncio.run(go(sys.argv[2]))
        text, error = result.text_content(), result.is_error
    except BaseException as exc:  # MemoryError under the guard, on a build without the fix
        text, error = f"raised {type(exc).__name__}", True
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"grew_mb": grew_kb / 1024, "text": text, "error": error}))
""")


def fetch_measured(srv: Server, path: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _MEASURE, srv.url("/warm"), srv.url(path)],
                          capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_gzip_bomb_inside_a_gzip_is_refused_within_the_memory_bound(
        serve: Callable[..., Server], one_gb_gzip: bytes) -> None:
    double = gzip.compress(one_gb_gzip, 9)
    assert len(double) < 5000  # a few kilobytes on the wire, 1 GiB two layers down
    srv = serve({"/warm": static("hello", "text/plain"), "/bomb": encoded(double, "gzip, gzip")})
    got = fetch_measured(srv, "/bomb")
    assert got["grew_mb"] < _BOUND_MB, got
    assert got["error"] and "content codings stacked (gzip, gzip)" in got["text"], got


@pytest.mark.slow
def test_a_one_layer_gzip_bomb_stops_at_the_cap_within_the_memory_bound(
        serve: Callable[..., Server], one_gb_gzip: bytes) -> None:
    srv = serve({"/warm": static("hello", "text/plain"), "/bomb": encoded(one_gb_gzip, "gzip")})
    got = fetch_measured(srv, "/bomb")
    assert got["grew_mb"] < _BOUND_MB, got
    # Zeros are not text: the model is told what came, and that it went on past the cap.
    assert got["error"] and "5,000,000 bytes or more" in got["text"] and "not text" in got["text"], got


# --- the codings in process --------------------------------------------------------------------

LOCAL = [SimpleNamespace(tool="WebFetch", specifier="domain:127.0.0.1", behavior="allow", source="/cfg/config.toml")]


async def go(url: str, config: WebConfig | None = None) -> Any:
    return await run_fetch(WebFetchInput(url=url, prompt="what?"), config or WebConfig(), rules=LOCAL,
                           cache=PageCache())


BODY = b"".join(b"line of plain text number %d\n" % i for i in range(20_000))


@pytest.mark.anyio
async def test_each_accepted_coding_is_decoded_and_only_those_are_asked_for(serve: Callable[..., Server]) -> None:
    zlib_wrapped = zlib.compress(BODY)
    members = gzip.compress(BODY[:1000]) + gzip.compress(BODY[1000:])  # a gzip body may have several
    srv = serve({"/gzip": encoded(gzip.compress(BODY), "gzip"), "/x-gzip": encoded(gzip.compress(BODY), "x-gzip"),
                 "/zlib": encoded(zlib_wrapped, "deflate"), "/raw": encoded(zlib_wrapped[2:-4], "deflate"),
                 "/members": encoded(members, "gzip"), "/identity": encoded(BODY, "identity")})
    for path in ("/gzip", "/x-gzip", "/zlib", "/raw", "/members", "/identity"):
        result = await go(srv.url(path), WebConfig(window_chars=2_000_000))
        text = result.text_content()
        assert not result.is_error, (path, text[:500])
        assert f"Fetched {len(BODY):,} bytes" in text and "number 19999" in text, path
    # Only what WebFetch decodes in bounded steps itself (no br, no zstd, even when installed).
    assert {h["accept-encoding"] for _, _, h in srv.requests} == {"gzip, deflate"}


@pytest.mark.anyio
async def test_a_coding_not_asked_for_or_a_broken_body_is_a_sentence(serve: Callable[..., Server]) -> None:
    srv = serve({"/br": encoded(b"\x1b\x00\x00", "br"), "/broken": encoded(b"\x1f\x8b\x08\x00garbage" * 50, "gzip"),
                 "/two": encoded(gzip.compress(BODY), "deflate, gzip")})
    text = (await go(srv.url("/br"))).text_content()
    assert "content coding 'br', which WebFetch did not ask for (it accepts gzip, deflate)" in text
    text = (await go(srv.url("/broken"))).text_content()
    assert "sent a body that is not valid gzip" in text and "Traceback" not in text
    result = await go(srv.url("/two"))
    assert result.is_error and "2 content codings stacked (deflate, gzip)" in result.text_content()


@pytest.mark.anyio
async def test_a_compressed_body_is_cut_at_the_cap_counted_decoded(serve: Callable[..., Server]) -> None:
    srv = serve({"/big": encoded(gzip.compress(BODY), "gzip"), "/exact": encoded(gzip.compress(BODY[:4096]), "gzip")})
    text = (await go(srv.url("/big"), WebConfig(max_bytes=50_000))).text_content()
    assert "Fetched 50,000 bytes" in text and "stopped at the 50,000-byte cap" in text
    # Exactly at the cap, with nothing more to come, is not a truncation (the length header is the compressed one).
    text = (await go(srv.url("/exact"), WebConfig(max_bytes=4096))).text_content()
    assert "Fetched 4,096 bytes" in text and "cap:" not in text

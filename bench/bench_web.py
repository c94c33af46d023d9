"""WebFetch cost against a plain httpx GET, in the same run.

Serves a ~1 MB HTML page on 127.0.0.1, from a process of its own as a real
site is (an in-process server's threads would take the GIL from the calls
being measured), and times, on one event loop:

* ``httpx``      plain ``httpx.AsyncClient.get`` of the page on one kept-alive
                 client (the floor; ratios are against this);
* ``httpx-new``  the same GET with a new client per call, as WebFetch does;
* ``fetch``      WebFetch's download path alone (address checks, vetted
                 transport, capped streaming read), no conversion;
* ``webfetch``   the whole tool minus the model: check, fetch, HTML to
                 Markdown, window (cache off, so every run converts);
* ``cached``     the whole tool answering from its page cache.

Ratios are against ``httpx`` measured in the same process, so the figures
compare across machines better than the absolute times do (target: the
whole tool at most 20x a plain GET).

Then a batch of one WebFetch of that page and nine Reads of a 100 KB file,
through a session, against the nine Reads alone: the conversion runs in a
worker thread and releases the GIL, so the Reads must finish about as fast
as they do alone (target: at most 1.5x), and the whole batch must take no
longer than the WebFetch and the Reads one after another (target: at most
1x; a batch is never slower than its calls in turn). The batch is not
measured against the WebFetch alone: since WebFetch converts only as far
as its window, its Python parts (fetch, block scan) and the Reads take
turns on the GIL, and only the conversion runs beside them.

    python bench/bench_web.py [--runs N] [--size-kb K]
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import from_rounds, report  # noqa: E402


def make_page(size: int) -> bytes:
    parts = ["<!doctype html><html><head><title>Bench page</title>",
             "<style>body{font-family:sans-serif}</style><script>var tracking = 1;</script></head><body>",
             "<nav><ul>" + "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(30)) + "</ul></nav>"]
    i = 0
    while sum(len(p) for p in parts) < size:
        parts.append(
            f"<article><h2>Heading {i}</h2><p>Paragraph {i} with <b>bold</b>, <i>italic</i> and "
            f"<a href='/page/{i}?ref=bench'>a relative link</a>. Lorem ipsum dolor sit amet, consectetur "
            "adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>"
            f"<ul><li>point one of {i}</li><li>point two with <code>code()</code></li></ul>"
            f"<table><tr><th>key</th><th>value</th></tr><tr><td>k{i}</td><td>{i * 7}</td></tr></table>"
            "</article>"
        )
        i += 1
    parts.append("</body></html>")
    return "".join(parts).encode()


def serve_forever(size: int) -> None:
    """The page's server, run in a process of its own (``--serve``): it prints its port, then serves."""
    body = make_page(size)

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    httpd.daemon_threads = True
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


def start_server(size: int) -> tuple[subprocess.Popen[str], int]:
    """The server in another process, as a real site is: in this one, its
    threads would take the GIL from the calls being measured."""
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--size-kb", str(size // 1024)],
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    return server, port


async def timed(paths: dict[str, Callable[[], Awaitable[object]]], runs: int) -> dict[str, list[float]]:
    """Round-robin: every run times each path once, so a burst of load on a
    shared machine hits all paths alike instead of whichever ran during it."""
    for fn in paths.values():
        await fn()  # warm-up: imports, CA bundle, first connection
    out: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(runs):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            await fn()
            out[name].append(time.perf_counter() - t0)
    return out


async def main(runs: int, size_kb: int) -> None:
    import httpx

    from pegboard.plugins.web._cache import PageCache
    from pegboard.plugins.web._fetch import FetchLimits, fetch
    from pegboard.plugins.web._models import WebConfig, WebFetchInput
    from pegboard.plugins.web._urls import check_url
    from pegboard.plugins.web._webfetch import run_fetch

    body = make_page(size_kb * 1024)
    rules = [SimpleNamespace(tool="WebFetch", specifier="domain:127.0.0.1", behavior="allow", source="bench")]
    allowed = frozenset({"127.0.0.1"})
    config = WebConfig(cache_ttl_s=0)
    warm_cache = PageCache()

    shared = httpx.AsyncClient(trust_env=False)

    async def plain() -> object:
        # One long-lived client with keep-alive: the cheapest a GET can be, so
        # the ratio is conservative (WebFetch opens a fresh connection per call).
        r = await shared.get(url)
        return r.content

    async def plain_fresh() -> object:
        async with httpx.AsyncClient(trust_env=False) as client:
            r = await client.get(url)
            return r.content

    async def fetch_only() -> object:
        return await fetch(check_url(url), allowed_hosts=allowed, limits=FetchLimits())

    async def whole() -> object:
        result = await run_fetch(args, config, rules=rules, cache=PageCache(ttl_s=0))
        assert not result.is_error, result.text_content()[:300]
        return result

    async def cached() -> object:
        return await run_fetch(args, WebConfig(), rules=rules, cache=warm_cache)

    server, port = start_server(size_kb * 1024)
    url = f"http://127.0.0.1:{port}/page"
    args = WebFetchInput(url=url, prompt="what is on the page?")
    try:
        sample = await whole()
        md_chars = len(sample.text_content())  # type: ignore[attr-defined]
        times = await timed({"httpx": plain, "httpx-new": plain_fresh, "fetch": fetch_only,
                             "webfetch": whole, "cached": cached}, runs)
        batch = await batch_rounds(url, runs)
    finally:
        await shared.aclose()
        server.terminate()
        server.wait()

    floor = statistics.median(times["httpx"])
    print(f"page: {len(body):,} bytes of HTML; WebFetch result {md_chars:,} characters "
          f"(window {config.window_chars:,}); {runs} runs each, median and min")
    print(f"{'path':<10} {'median ms':>10} {'min ms':>8} {'x httpx':>8}")
    for name, samples in times.items():
        med = statistics.median(samples)
        print(f"{name:<10} {med * 1000:>10.1f} {min(samples) * 1000:>8.1f} {med / floor:>8.2f}")
    for name in ("reads", "mixed_reads", "mixed", "webfetch"):
        print(f"batch: {name:<12} {statistics.median(batch[name]) * 1000:8.1f} ms (median)")
    print(f"first result through a session: page text inline {batch['first_inline'][0]:.2f} of the result limit"
          f"{' (spilled to a file)' if batch['first_spilled'][0] else ''}")
    report(
        from_rounds(f"WebFetch of a {len(body) // 1024} KB page / plain GET",
                    [w / h for w, h in zip(times["webfetch"], times["httpx"])], 20.0),
        from_rounds("9 Reads beside a WebFetch / the 9 Reads alone",
                    [m / r for m, r in zip(batch["mixed_reads"], batch["reads"])], 1.5),
        from_rounds("batch of a WebFetch and 9 Reads / the two one after another",
                    [m / (w + r) for m, w, r in zip(batch["mixed"], batch["webfetch"], batch["reads"])], 1.0),
        from_rounds(f"first WebFetch result of the {len(body) // 1024} KB page, page text inline / the session's "
                    "result limit", batch["first_inline"], 0.8, bound="at least", item="35.4",
                    note="spilled to a file" if batch["first_spilled"][0] else "inline, not spilled"),
    )


async def batch_rounds(url: str, runs: int) -> dict[str, list[float]]:
    """Per round: 9 Reads alone, WebFetch alone, and both in one batch (with
    the moment the last Read of that batch finished, from a post-call hook)."""
    import pluggy

    from pegboard import Toolbox

    hookimpl = pluggy.HookimplMarker("pegboard")
    finished: dict[str, float] = {}

    class Clock:
        @hookimpl
        def pegboard_after_call(self, call: Any, result: Any) -> None:
            finished[call.call_id] = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            os.environ[var] = str(root / var.lower())
        os.environ["PEGBOARD_POLICY"] = str(root / "no-policy.toml")
        project = root / "project"
        project.mkdir()
        text = project / "notes.txt"  # over the size a Read does on the event loop: it takes a thread
        text.write_text("".join(f"line {i} of the notes, with some words to read\n" for i in range(2200)))
        config = root / "bench.toml"
        config.write_text('[permissions]\nallow = ["WebFetch(domain:127.0.0.1)"]\n[plugins.web]\ncache_ttl_s = 0\n')
        toolbox = Toolbox.load(cwd=project, config=config, plugins=["fs", "web"], host=Clock())
        session = toolbox.session(mode="default")
        reads = [("Read", {"file_path": str(text)}, f"read-{i}") for i in range(9)]
        fetch = ("WebFetch", {"url": url, "prompt": "what is on the page?"}, "fetch")

        async def run(calls: list[Any]) -> tuple[float, float]:
            finished.clear()
            start = time.perf_counter()
            results = await session.call_batch(calls)
            end = time.perf_counter()
            assert not any(r.is_error for r in results), [r.text_content()[:200] for r in results if r.is_error]
            read_ends = [t for cid, t in finished.items() if cid.startswith("read-")]
            return end - start, (max(read_ends) - start) if read_ends else 0.0

        # The first result of the long page, as the model gets it through the session: inline,
        # the window most of the session's result limit (not 2,000 characters and a file).
        first = await session.call("WebFetch", {"url": url, "prompt": "what is on the page?"})
        first_text = first.text_content()
        limit = toolbox.settings.core.results.max_chars
        spilled = "saved in" in first_text or "over the" in first_text
        inline = len(first_text.split("----- page text -----\n", 1)[-1].split("\n----- end of page text -----")[0]) \
            if not spilled else min(len(first_text), 2_000)
        await run([fetch, *reads])  # warm-up
        out: dict[str, list[float]] = {"reads": [], "webfetch": [], "mixed": [], "mixed_reads": [],
                                       "first_inline": [inline / limit], "first_spilled": [float(spilled)]}
        for _ in range(runs):
            out["reads"].append((await run(reads))[0])
            out["webfetch"].append((await run([fetch]))[0])
            mixed, mixed_reads = await run([fetch, *reads])
            out["mixed"].append(mixed)
            out["mixed_reads"].append(mixed_reads)
        await session.aclose()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--size-kb", type=int, default=1024)
    parser.add_argument("--serve", action="store_true", help="only serve the page (the bench starts this itself)")
    ns = parser.parse_args()
    if ns.serve:
        serve_forever(ns.size_kb * 1024)
    else:
        asyncio.run(main(ns.runs, ns.size_kb))

"""WebFetch's conversion on the worst pages found, at four sizes: linear within 2x.

Before issue 30, a page of paragraphs that are never closed took
0.38 / 0.63 / 2.33 / 9.6 / 38 s to convert at 200 / 400 / 800 / 1,600 /
3,200 KB (the block scan searched from each block to the end of the page),
and a page of bare ``<p>x`` was worse. This converts the first window of each
kind of page as WebFetch does (``open_and_read`` with the default 40,000-
character window; pages without a safe cut convert whole), in rounds that
interleave the sizes, and reports for each kind the cost per KB at the largest
size against the cost per KB at the smallest, measured in the same round
(target: at most 2x, linear within 2x).

Kinds: ``unclosed <p>`` (paragraphs of a sentence, never closed), ``bare <p>x``
(a paragraph per four bytes), ``unclosed <pre>`` (code blocks never closed).

    python bench/bench_web_worst.py [--rounds N] [--sizes-kb 200,400,800,1600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import from_rounds, report  # noqa: E402

WINDOW = 40_000  # WebFetch's default window_chars


def unclosed_paragraphs(size: int) -> bytes:
    unit = "<p>Paragraph text with some <b>words</b> in it, and more words here.\n"
    return ("<html><body>" + unit * (size // len(unit))).encode()


def bare_paragraphs(size: int) -> bytes:
    return ("<html><body>" + "<p>x" * (size // 4)).encode()


def unclosed_pre(size: int) -> bytes:
    return ("<html><body>" + "<pre>code line\n" * (size // 15)).encode()


KINDS: dict[str, Callable[[int], bytes]] = {
    "unclosed <p>": unclosed_paragraphs, "bare <p>x": bare_paragraphs, "unclosed <pre>": unclosed_pre}


def convert_once(body: bytes) -> float:
    from pegboard.plugins.web._convert import open_and_read

    started = time.perf_counter()
    open_and_read(body, "text/html; charset=utf-8", "https://bench.example/page", WINDOW + 1)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes-kb", default="200,400,800,1600")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes_kb.split(",")]
    pages = {kind: {kb: make(kb * 1024) for kb in sizes} for kind, make in KINDS.items()}
    convert_once(pages["unclosed <p>"][sizes[0]])  # imports and the converter's first call, outside the rounds
    seconds: dict[str, dict[int, list[float]]] = {kind: {kb: [] for kb in sizes} for kind in KINDS}
    for _ in range(args.rounds):
        for kind in KINDS:
            for kb in sizes:
                seconds[kind][kb].append(convert_once(pages[kind][kb]))
    ratios = []
    for kind in KINDS:
        print(f"{kind}:")
        for kb in sizes:
            times = seconds[kind][kb]
            median = statistics.median(times)
            print(f"  {kb:>5} KB  {median * 1000:9.1f} ms  {median * 1e6 / kb:8.1f} us/KB"
                  f"  (rounds {', '.join(f'{t * 1000:.1f}' for t in times)} ms)")
        small, large = sizes[0], sizes[-1]
        per_round = [(seconds[kind][large][i] / large) / (seconds[kind][small][i] / small)
                     for i in range(args.rounds)]
        curve = ", ".join(
            f"{kb} KB {statistics.median(seconds[kind][kb]) / kb / (statistics.median(seconds[kind][small]) / small):.2f}"
            for kb in sizes)
        print(f"  per-KB cost against {small} KB: {curve}")
        ratios.append(from_rounds(f"WebFetch conversion of {kind} pages: per KB at {large} KB / at {small} KB",
                                  per_round, 2.0, note=curve))
    report(*ratios)


if __name__ == "__main__":
    main()

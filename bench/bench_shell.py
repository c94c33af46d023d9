"""Shell plugin benchmark: classifier throughput and the cost of running `true`.

    python bench/bench_shell.py [--rounds N]

Prints commands classified per second (cold parse cache, so every command is
parsed), then the median wall time of `true` run through the Bash tool with
the sandbox off, with bubblewrap and with Landlock (where they work), each
against `bash -c true` measured in the same run, as a ratio; then the
sandbox's walk for protected paths (first and kept) against a plain os.walk
of the same tree; then a sandboxed Bash decision with 2,000, 10,000 and
50,000 Read deny rules against one with none (interleaved rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, from_rounds, report  # noqa: E402

COMMANDS = [
    "ls -la",
    "git status",
    "git log --oneline -5",
    "rg -n foo src",
    "find . -name '*.py' -type f",
    "wc -l *.py",
    "ls -la | grep py | wc -l",
    "cat README.md && git diff --stat HEAD~1",
    "sort --compress-program=sh b.py",
    "echo $(rm -rf x)",
    "npm run build && npm test",
    "sed -n '1,20p' pyproject.toml",
]


def bench_classifier(rounds: int) -> float:
    from pegboard.plugins.shell import _parse
    from pegboard.plugins.shell._classify import classify

    cwd = Path.cwd()
    classify("ls", cwd)  # import tree-sitter once, outside the timing
    n = 0
    start = time.perf_counter()
    for i in range(rounds):
        _parse.parse_command.cache_clear()
        for cmd in COMMANDS:
            classify(f"{cmd} # {i}", cwd)
            n += 1
    return n / (time.perf_counter() - start)


def bench_raw(rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], stdin=subprocess.DEVNULL, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def bench_tool(sandbox: str, rounds: int) -> float | None:
    from pegboard import Toolbox

    root = Path(tempfile.mkdtemp(prefix="pb-bench-"))
    try:
        return await _time_tool(root, sandbox, rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _time_tool(root: Path, sandbox: str, rounds: int) -> float | None:
    from pegboard import Toolbox

    cfg = root / "bench.toml"
    cfg.write_text(f'[plugins.shell]\nsandbox = "{sandbox}"\n')
    tb = Toolbox.load(cwd=root, plugins=["shell"], config=cfg)
    session = tb.session(mode="default")
    from pegboard.plugins.shell._sandbox import backend_for

    if sandbox != "off" and backend_for(sandbox) == "none":
        await session.aclose()
        return None
    times = []
    try:
        await session.call("Bash", {"command": "true"})
        for _ in range(rounds):
            t = time.perf_counter()
            r = await session.call("Bash", {"command": "true"})
            times.append(time.perf_counter() - t)
            if r.is_error:
                raise SystemExit(f"Bash failed: {r.text_content()}")
    finally:
        await session.aclose()
    return statistics.median(times)


def bench_guard(entries: int, rounds: int) -> tuple[float, float, float]:
    """The sandbox's walk for protected paths over a project of ``entries``
    files and folders: first walk, and a kept one (nothing changed), with a
    plain ``os.walk`` listing of the same tree as the baseline (medians)."""
    from pegboard import Toolbox
    from pegboard.plugins.shell import _guard

    root = Path(tempfile.mkdtemp(prefix="pb-bench-guard-")).resolve()
    try:
        for i in range(entries // 10):
            folder = root / f"d{i // 100}" / f"e{i % 100}"
            folder.mkdir(parents=True, exist_ok=True)
            for j in range(9):
                (folder / f"f{j}.txt").write_bytes(b"")
        (root / "vendor" / "lib" / ".git" / "hooks").mkdir(parents=True)
        racy, _guard._RACY_NS = _guard._RACY_NS, 0  # the tree is brand new; it would be listed every time
        tb = Toolbox.load(cwd=root, plugins=["shell"])
        plain, first, kept = [], [], []
        for _ in range(rounds):
            t = time.perf_counter()
            for _dir in os.walk(root):
                pass
            plain.append(time.perf_counter() - t)
            session = tb.session(mode="acceptEdits")
            t = time.perf_counter()
            _guard.guard(session, session.plugin_state("shell"), (root,))
            first.append(time.perf_counter() - t)
            t = time.perf_counter()
            found = _guard.guard(session, session.plugin_state("shell"), (root,))
            kept.append(time.perf_counter() - t)
            assert root / "vendor" / "lib" / ".git" in found.paths
        _guard._RACY_NS = racy
        return statistics.median(plain), statistics.median(first), statistics.median(kept)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_deny_rules(counts: tuple[int, ...], rounds: int) -> dict[int, list[float]]:
    """A Bash decision the bubblewrap box settles (``npm test`` in acceptEdits:
    the whole sandbox plan is built) with ``n`` ``Read`` deny rules, each
    naming a folder, for each ``n`` in ``counts``: per round, the median of
    20 decisions for each count in turn (interleaved), as a ratio to the
    first count's in the same round."""
    import json

    from pegboard import Toolbox
    from pegboard._api.decisions import PermissionRequest

    base = Path(tempfile.mkdtemp(prefix="pb-bench-deny-")).resolve()
    try:
        deciders = []
        for n in counts:
            root = base / f"p{n}"
            root.mkdir()
            cfg = base / f"c{n}.toml"
            rules = json.dumps([f"Read(./secret{i}/**)" for i in range(n)])
            cfg.write_text(f'[plugins.shell]\nsandbox = "bubblewrap"\n\n[permissions]\ndeny = {rules}\n')
            tb = Toolbox.load(cwd=root, plugins=["shell", "fs"], config=cfg)
            session = tb.session(mode="acceptEdits")
            tool = tb.tools["Bash"]

            def decide(tb: Any = tb, session: Any = session, tool: Any = tool) -> str:
                request = PermissionRequest(tool=tool, input={"command": "npm test"}, session=session,
                                            policy=session.policy)
                return tb.permissions.evaluate(request).decision

            assert decide() == "allow", n  # the box settles it, so the plan is built in full
            deciders.append(decide)
        ratios: dict[int, list[float]] = {n: [] for n in counts}
        for _ in range(rounds):
            medians = []
            for decide in deciders:
                times = []
                for _ in range(20):
                    t = time.perf_counter()
                    decide()
                    times.append(time.perf_counter() - t)
                medians.append(statistics.median(times))
            for n, m in zip(counts, medians):
                ratios[n].append(m / medians[0])
        return ratios
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pb-bench-home-"))
    try:
        run(tmp, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()


def run(tmp: Path, rounds: int) -> None:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(tmp / "no-policy.toml")

    rate = bench_classifier(max(rounds // 2, 5))
    print(f"classifier: {rate:,.0f} commands/s ({len(COMMANDS)} distinct shapes, parse cache cleared)")
    raw = bench_raw(rounds)
    print(f"bash -c true:           {raw * 1000:7.2f} ms (median of {rounds})")
    ratios = []
    for sandbox in ("off", "bubblewrap", "landlock"):
        t = asyncio.run(bench_tool(sandbox, rounds))
        if t is None:
            print(f"Bash true, {sandbox:10}: unavailable here")
            continue
        print(f"Bash true, {sandbox:10}: {t * 1000:7.2f} ms  = {t / raw:5.2f} x bash -c true")
        ratios.append(Ratio(f"Bash true through the tool, sandbox {sandbox} / bash -c true", t / raw, 0,
                            bound="info"))
    for entries in (20_000, 100_000):
        plain, first, kept = bench_guard(entries, max(rounds // 10, 3))
        print(f"guard walk, {entries:,} entries: first {first * 1000:6.0f} ms = {first / plain:4.1f} x os.walk, "
              f"kept {kept * 1000:5.0f} ms = {kept / plain:4.2f} x os.walk ({plain * 1000:.0f} ms)")
        ratios.append(Ratio(f"sandbox guard walk of {entries:,} entries, first / os.walk", first / plain, 0,
                            bound="info"))
        ratios.append(Ratio(f"sandbox guard walk of {entries:,} entries, kept / os.walk", kept / plain, 0,
                            bound="info"))
    if asyncio.run(bench_tool("bubblewrap", 1)) is not None:
        counts = (0, 2_000, 10_000, 50_000)
        by_count = bench_deny_rules(counts, max(rounds // 8, 3))
        curve = ", ".join(f"{n:,}: {statistics.median(by_count[n]):.2f}x" for n in counts)
        print(f"sandboxed Bash decision by Read deny rules, against none: {curve}")
        for n in counts[1:]:
            # the plan and the rules' paths are kept while the engine hands over the same rules
            ratios.append(from_rounds(f"sandboxed Bash decision with {n:,} Read deny rules / none", by_count[n],
                                      2.0, item="35.1", note=f"by Read deny rules: {curve}" if n == counts[-1] else ""))
    report(*ratios)


if __name__ == "__main__":
    main()

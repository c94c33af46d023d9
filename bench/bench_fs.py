"""Benchmarks for the fs plugin: ``python bench/bench_fs.py``.

Prints ratios measured in this one run (absolute times depend on the machine):

* Read of lines 1,000,000-1,002,000 of a generated 50 MB file through the
  whole pipeline (Toolbox -> Session -> permission -> handler), against
  ``sed -n '1000000,1002000p;1002000q'`` run as a subprocess from Python;
  with the peak memory the Read added (tracemalloc) and the process RSS.
* Grep (files_with_matches) over the standard library, with ripgrep and with the
  Python engine, against running ``rg -l`` directly (target: the Python
  engine at most 5x ripgrep).
* One Read of a small file (40 lines) through a session, against a plain
  Python ``open(path).read()`` (target: at most 4x).
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, from_rounds, report  # noqa: E402

REPEAT = 7
FIRST, LAST = 1_000_000, 1_002_000


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def _make_file(folder: Path) -> Path:
    path = folder / "big.txt"
    line = "{:09d} the quick brown fox jumps over lazy dogs\n"  # 50 bytes
    with open(path, "w", encoding="ascii") as f:
        for start in range(0, 1_050_000, 10_000):
            f.write("".join(line.format(i) for i in range(start + 1, start + 10_001)))
    return path


def _config(folder: Path, backend: str) -> Path:
    cfg = folder / f"bench-{backend}.toml"
    # a result cap big enough for the 2001 lines, so the whole window is really produced
    cfg.write_text(f'[results]\nmax_chars = 10000000\n[plugins.fs]\nsearch_backend = "{backend}"\n')
    return cfg


async def _bench_read(folder: Path, path: Path) -> None:
    from pegboard import Toolbox

    session = Toolbox.load(cwd=folder, plugins=["fs"], config=_config(folder, "auto")).session(mode="default")
    args = {"file_path": str(path), "offset": FIRST, "limit": LAST - FIRST + 1}
    warm = await session.call("Read", args)
    lines = warm.text_content().splitlines()
    assert lines[0].startswith(f"{FIRST}\t") and lines[-1].startswith(f"{LAST}\t"), lines[:1] + lines[-1:]
    sed = ["sed", "-n", f"{FIRST},{LAST}p;{LAST}q", str(path)]
    expected = subprocess.run(sed, capture_output=True, check=True).stdout.decode().splitlines()
    assert [ln.split("\t", 1)[1] for ln in lines] == expected

    read_t, sed_t = [], []
    for _ in range(REPEAT):
        t = time.perf_counter()
        await session.call("Read", args)
        read_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(sed, capture_output=True, check=True)
        sed_t.append(time.perf_counter() - t)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    await session.call("Read", args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    await session.aclose()

    size_mb = path.stat().st_size / 1e6
    r, s = _median(read_t), _median(sed_t)
    print(f"Read lines {FIRST:,}-{LAST:,} of a {size_mb:.0f} MB file ({REPEAT} runs, median)")
    print(f"  Read via pipeline : {r * 1000:8.1f} ms")
    print(f"  sed subprocess    : {s * 1000:8.1f} ms")
    report(from_rounds(f"Read of lines {FIRST:,}-{LAST:,} of a {size_mb:.0f} MB file / sed",
                       [a / b for a, b in zip(read_t, sed_t)], 1.0))
    print(f"  peak Python memory during one Read: {(peak - base) / 1e6:.2f} MB "
          f"(file is {size_mb:.0f} MB); max RSS grew by {(rss_after - rss_before) / 1024:.1f} MB")


async def _bench_grep(folder: Path) -> None:
    from pegboard import Toolbox

    # a copy of the standard library: a big source tree with no ignore file above it
    # (the installed copies sit under ignored folders, which both engines rightly skip)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    tree = folder / "stdlib"
    shutil.copytree(stdlib, tree, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
                    symlinks=True)
    pattern = r"def __init__\(self"
    rg = shutil.which("rg")
    if rg is None:
        print("Grep vs rg: skipped, ripgrep (rg) is not installed")
    engines = (["rg"] if rg else []) + ["python"]
    times: dict[str, float] = {}
    counts: dict[str, int] = {}
    for backend in engines:
        tb = Toolbox.load(cwd=tree, plugins=["fs"], config=_config(folder, backend))
        session = tb.session(mode="default")
        args = {"pattern": pattern, "head_limit": 0}
        first = await session.call("Grep", args)
        counts[backend] = len(first.text_content().splitlines()) - 1
        samples = []
        for _ in range(REPEAT if backend == "rg" else 2):
            t = time.perf_counter()
            await session.call("Grep", args)
            samples.append(time.perf_counter() - t)
        times[backend] = _median(samples)
        await session.aclose()
    nfiles = sum(1 for _ in tree.rglob("*.py"))
    print(f"Grep {pattern!r} over {tree} (~{nfiles:,} .py files)")
    for backend in engines:
        print(f"  Grep tool, {backend:<6} engine: {times[backend] * 1000:8.1f} ms, {counts[backend]} files")
    if rg:
        raw = []
        for _ in range(REPEAT):
            t = time.perf_counter()
            out = subprocess.run([rg, "-l", "--no-config", pattern, str(tree)], capture_output=True)
            raw.append(time.perf_counter() - t)
        direct = _median(raw)
        print(f"  rg -l subprocess        : {direct * 1000:8.1f} ms, {len(out.stdout.splitlines())} files")
        print("  (Grep sorts by path, which keeps ripgrep on one thread)")
        spread = (min(raw) / direct, max(raw) / direct)
        report(Ratio("Grep tool, ripgrep engine / rg -l", times["rg"] / direct, 0, bound="info"),
               Ratio("Grep tool, Python engine / rg -l", times["python"] / direct, 5.0,
                     low=times["python"] / max(raw), high=times["python"] / min(raw),
                     note=f"rg rounds spread {spread[0]:.2f}-{spread[1]:.2f}"))


async def _bench_small_read(folder: Path) -> None:
    from pegboard import Toolbox

    project = folder / "small"
    project.mkdir()
    path = project / "small.py"
    path.write_text("".join(f"line {i} of a small file, as source code is\n" for i in range(40)))
    session = Toolbox.load(cwd=project, plugins=["fs"]).session(mode="default")
    args = {"file_path": str(path)}
    first = await session.call("Read", args)
    assert not first.is_error and first.text_content().count("\n") >= 39, first.text_content()

    def plain() -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()

    rounds, n = 25, 200
    ratios, plain_us, read_us = [], [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(n):
            plain()
        p = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            await session.call("Read", args)
        r = (time.perf_counter() - t) / n
        ratios.append(r / p)
        plain_us.append(p * 1e6)
        read_us.append(r * 1e6)
    await session.aclose()
    print(f"one small Read (40 lines) through a session: {_median(read_us):.1f} µs; "
          f"open and read: {_median(plain_us):.1f} µs ({rounds} rounds of {n})")
    report(from_rounds("one small Read through a session / open and read", ratios, 4.0))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp).resolve()
        # keep pegboard's own state (sessions, checkpoints) out of the user's home
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            os.environ[var] = str(folder / "xdg" / var.lower())
        os.environ["PEGBOARD_POLICY"] = str(folder / "no-policy.toml")
        t = time.perf_counter()
        path = _make_file(folder)
        print(f"(generated {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.1f} s)")
        asyncio.run(_bench_read(folder, path))
        asyncio.run(_bench_grep(folder))
        asyncio.run(_bench_small_read(folder))


if __name__ == "__main__":
    main()

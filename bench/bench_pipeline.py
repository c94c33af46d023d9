"""How much the call pipeline costs, and whether batches really overlap.

    .venv/bin/python bench/bench_pipeline.py [--profile]

1. One call of a no-op tool through the whole pipeline (reserved parameters,
   validation, permission decision, pre/post hooks, result shaping), in
   microseconds and as a multiple of one pydantic validation of the same
   arguments (target: under 30x).
2. Ten read-only calls that each sleep 100 ms, as one batch, against one such
   call alone (target: under 1.5x).
3. A batch of 100 small Reads against the same 100 Reads one after another,
   each side keeping its 100 results as an agent loop does, in 31 rounds
   (target: never slower, at most 1.05x: the work holds the GIL, so a batch
   of cheap calls gains nothing and must lose nothing).
4. How many cheap read-only calls of one batch run at once (target: more
   than ten; ten is the limit for slow calls).

The tools come in through a real entry point, as in the tests, from a
throwaway distribution in a temporary directory; config and data directories
are temporary too, so no user configuration changes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import statistics
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, from_rounds, report  # noqa: E402

PLUGIN = '''
import asyncio
from pydantic import BaseModel, Field
from pegboard import Tool, hookimpl

class NoopIn(BaseModel):
    text: str = Field(description="Some text.")
    count: int = Field(default=1, ge=1, description="A number.")
    flag: bool = Field(default=False, description="A switch.")

async def noop(args, ctx):
    return "ok"

class NapIn(BaseModel):
    seconds: float = 0.1

async def nap(args, ctx):
    await asyncio.sleep(args.seconds)
    return "rested"

RUNNING = [0, 0]  # now, most at once

class ProbeIn(BaseModel):
    pass

async def probe(args, ctx):
    RUNNING[0] += 1
    RUNNING[1] = max(RUNNING[1], RUNNING[0])
    await asyncio.sleep(0.002)
    RUNNING[0] -= 1
    return "seen"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Noop", handler=noop, input_model=NoopIn, read_only=True, permission="read"))
    register(Tool(name="Nap", handler=nap, input_model=NapIn, read_only=True, permission="read"))
    register(Tool(name="Probe", handler=probe, input_model=ProbeIn, read_only=True, permission="read"))

# One pre- and one post-call hook, so the figure includes running hooks.
@hookimpl
def pegboard_before_call(call):
    return None

@hookimpl
def pegboard_after_call(call, result):
    return None
'''

ARGS: dict[str, Any] = {"text": "hello", "count": 3, "flag": True}


def setup(tmp: Path) -> Any:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(tmp / "no-policy.toml")
    site = tmp / "site"
    dist = site / "benchplug-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: benchplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pegboard]\nbenchplug = benchplug_plugin\n")
    (site / "benchplug_plugin.py").write_text(textwrap.dedent(PLUGIN))
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    project = tmp / "project"
    project.mkdir()
    (project / "small.py").write_text("".join(f"line {i} of a small file\n" for i in range(40)))
    from pegboard import Toolbox

    return Toolbox.load(cwd=project, plugins=["benchplug", "fs"])


def per_call_us(fn: Any, rounds: int) -> float:
    """µs per call over ``rounds`` calls."""
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds * 1e6


async def per_call_us_async(fn: Any, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        await fn()
    return (time.perf_counter() - start) / rounds * 1e6


async def main(profile: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        toolbox = setup(Path(tmp))
        session = toolbox.session("default")
        tool = toolbox.tools["Noop"]
        model = tool.model
        first = await session.call("Noop", ARGS)
        assert first.text_content() == "ok", first

        # Interleaved rounds, so both figures of a round see the same load
        # from other processes; the ratio reported is the median round's.
        pairs = []
        for _ in range(9):
            validate_us = per_call_us(lambda: model.model_validate(ARGS), 20_000)
            call_us = await per_call_us_async(lambda: session.call("Noop", ARGS), 3_000)
            pairs.append((call_us / validate_us, validate_us, call_us))
        ratio, validate_us, call_us = sorted(pairs)[len(pairs) // 2]
        print(f"one pydantic validation:     {validate_us:8.2f} µs")
        print(f"one call through pipeline:   {call_us:8.2f} µs  = {ratio:.1f}x validation")

        if profile:
            import cProfile
            import pstats

            async def many() -> None:
                for _ in range(3_000):
                    await session.call("Noop", ARGS)

            prof = cProfile.Profile()
            prof.enable()
            await many()
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)

        naps = []
        for _ in range(3):
            one = await timed(session, 1)
            ten = await timed(session, 10)
            naps.append(ten / one)
        print(f"ten 100 ms reads as a batch / one alone: {statistics.median(naps):.2f}x")

        small = str(Path(tmp) / "project" / "small.py")
        reads = [("Read", {"file_path": small})] * 100
        await session.call_batch(reads)
        batch_vs_seq = []
        for _ in range(31):
            # Both keep their 100 results, as an agent loop does to answer the
            # model: a batch's list of live results costs the collector a pass
            # that calls whose results are dropped at once never pay.
            start = time.perf_counter()
            kept = [await session.call(name, args) for name, args in reads]
            seq = time.perf_counter() - start
            assert len(kept) == len(reads)
            del kept
            start = time.perf_counter()
            results = await session.call_batch(reads)
            batched = time.perf_counter() - start
            assert not any(r.is_error for r in results)
            batch_vs_seq.append(batched / seq)
        print(f"100 small Reads as a batch / one after another: {statistics.median(batch_vs_seq):.2f}x")

        plugin = sys.modules["benchplug_plugin"]
        await session.call_batch([("Probe", {})] * 3)  # a tool proves cheap by its first calls
        plugin.RUNNING[1] = 0
        await session.call_batch([("Probe", {})] * 40)
        at_once = plugin.RUNNING[1]
        print(f"cheap read-only calls running at once in a batch of 40: {at_once}")
        await session.aclose()
        report(
            from_rounds("one no-op call through the pipeline / one validation", [p[0] for p in pairs], 30.0,
                        bound="under"),
            from_rounds("ten 100 ms read-only calls as a batch / one alone", naps, 1.5, bound="under"),
            # the work holds the GIL and each call's decision is taken: "never slower" within 5%
            from_rounds("a batch of 100 small Reads / the same one after another", batch_vs_seq, 1.05,
                        item="35.8"),
            Ratio("cheap read-only calls of a batch running at once", at_once, 10, bound="over", unit=""),
        )
        return 0


async def timed(session: Any, n: int) -> float:
    start = time.perf_counter()
    results = await session.call_batch([("Nap", {"seconds": 0.1})] * n)
    elapsed = time.perf_counter() - start
    assert all(r.text_content() == "rested" for r in results), results
    return elapsed


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", action="store_true", help="print the pipeline's hot spots")
    sys.exit(asyncio.run(main(parser.parse_args().profile)))

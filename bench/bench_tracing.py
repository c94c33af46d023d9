"""What tracing costs: a call, and start-up, with OpenTelemetry absent, present
but not configured (tracing off), and configured (tracing on).

    .venv/bin/python bench/bench_tracing.py

The three configurations alternate in one process, many short rounds, so a
busy machine slows them alike (pegboard's only test for the package is
whether ``opentelemetry.trace`` was imported, which the bench switches):

- "absent": not imported, as without the package;
- "off": ``opentelemetry.trace`` imported (a framework such as pydantic-ai
  does that), no SDK configured: pegboard looks for a provider at each call
  and finds none (target: at most 1.05x "absent");
- "on": the SDK configured, spans handed to a simple processor and an
  in-memory exporter (for information: what the spans cost).

Start-up: ``import pegboard``, a toolbox loaded and one call, in a new
process, with the package installed against blocked (target: at most 1.05x;
pegboard imports nothing of it until a host has).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, from_rounds, report  # noqa: E402

ROUNDS = 40
CALLS = 300
STARTUP_ROUNDS = 7

CALL = """
import asyncio, json, sys, time
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pegboard import Toolbox, _tracing

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
api = sys.modules["opentelemetry.trace"]


def absent():  # pegboard's only test for the package: has anyone imported the API?
    _tracing._reset()
    sys.modules.pop("opentelemetry.trace", None)


def off():  # imported, no provider configured
    _tracing._reset()
    sys.modules["opentelemetry.trace"] = api


def on():  # an SDK configured (as set_tracer_provider makes it)
    sys.modules["opentelemetry.trace"] = api
    _tracing._found[0] = provider.get_tracer("pegboard")


async def main():
    session = Toolbox.load(cwd={root!r}, plugins=[]).session("default")
    for _ in range(300):
        await session.call("ScratchpadList", {{}})
    times = {{"absent": [], "off": [], "on": []}}
    for _ in range({rounds}):
        for name, setup in (("absent", absent), ("off", off), ("on", on)):
            setup()
            started = time.perf_counter()
            for _ in range({calls}):
                await session.call("ScratchpadList", {{}})
            times[name].append((time.perf_counter() - started) / {calls} * 1e6)
            exporter.clear()
    off()
    print(json.dumps(times))

asyncio.run(main())
"""

STARTUP = """
import time
started = time.perf_counter()
import asyncio
from pegboard import Toolbox
session = Toolbox.load(cwd={root!r}, plugins=[]).session("default")
asyncio.run(session.call("ScratchpadList", {{}}))
print((time.perf_counter() - started) * 1e3)
"""


def run(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    root = tempfile.mkdtemp(prefix="pegboard-bench-tracing-")
    out = subprocess.run([sys.executable, "-c", CALL.format(root=root, rounds=ROUNDS, calls=CALLS)],
                         capture_output=True, text=True, check=True)
    per_call: dict[str, list[float]] = json.loads(out.stdout.strip().splitlines()[-1])
    blocked = "import sys\nsys.modules['opentelemetry'] = None\n"
    startup: dict[str, list[float]] = {"absent": [], "installed": []}
    for _ in range(STARTUP_ROUNDS):
        startup["absent"].append(run(blocked + STARTUP.format(root=root)))
        startup["installed"].append(run(STARTUP.format(root=root)))
    for name, values in per_call.items():
        print(f"a call, OpenTelemetry {name}: {statistics.median(values):.1f} us")
    for name, values in startup.items():
        print(f"start-up and one call, OpenTelemetry {name}: {statistics.median(values):.1f} ms")
    report(
        from_rounds("a call with tracing off (API imported, no SDK) / without OpenTelemetry",
                    [off / absent for off, absent in zip(per_call["off"], per_call["absent"])], 1.05),
        from_rounds("a call with tracing on (SDK, in-memory exporter) / without OpenTelemetry",
                    [on / absent for on, absent in zip(per_call["on"], per_call["absent"])], 0, bound="info"),
        from_rounds("start-up and one call with OpenTelemetry installed / import blocked",
                    [a / b for a, b in zip(startup["installed"], startup["absent"])], 1.05),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

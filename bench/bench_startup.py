"""How long `pegboard tools list` takes against the import floor.

Prints the median wall time of `pegboard tools list` (warm inventory cache,
and cold: cache removed before each run) and of
`python -c "import pydantic, pluggy, click"`, measured in the same run, and
their ratio. Target: warm ratio <= 1.5.

    python bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def median_time(cmd: list[str], runs: int, env: dict[str, str], before: object = None) -> float:
    times = []
    for _ in range(runs):
        if callable(before):
            before()
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    pegboard = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "XDG_CACHE_HOME": os.path.join(tmp, "cache")}
        listing = [pegboard, "--cwd", tmp, "tools", "list"]
        floor = median_time([sys.executable, "-c", "import pydantic, pluggy, click"], args.runs, env)
        subprocess.run(listing, check=True, stdout=subprocess.DEVNULL, env=env)
        warm = median_time(listing, args.runs, env)
        cache = Path(tmp) / "cache"
        cold = median_time(listing, max(3, args.runs // 3), env,
                           before=lambda: shutil.rmtree(cache, ignore_errors=True))
    print(f"import floor (pydantic, pluggy, click): {floor * 1000:7.1f} ms")
    print(f"pegboard tools list, warm cache:        {warm * 1000:7.1f} ms   ratio {warm / floor:.2f}  (target <= 1.5)")
    print(f"pegboard tools list, cold (no cache):   {cold * 1000:7.1f} ms   ratio {cold / floor:.2f}")


if __name__ == "__main__":
    main()

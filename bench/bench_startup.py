"""How long pegboard's commands take to start, against two floors.

The import floor is ``python -c "import pydantic, pluggy, click"``: what any
CLI built on these libraries pays before doing anything. The model floor is
that plus one pydantic model built and validated: every command below builds
models (the core's and the plugins' config, the tool's input), and the first
model a process builds imports pydantic's schema machinery, about 1.9-2x the
import floor (callgrind: 324M instructions for the floor, 430M with ``from
pydantic import BaseModel``, 625M with one two-field model), before any of
pegboard's own work. Measured in rounds, each round running every command
once in turn, so a busy spell on a shared machine lands on all of them
alike; the ratio is the median round's.

* ``pegboard tools list`` with a warm inventory cache, against the import
  floor (target <= 1.5x); and cold, its cache removed before each run,
  against the model floor (target <= 1.5x; issue 35, item 7);
* ``pegboard permissions check Read --input ...`` with no rules, against the
  model floor (target <= 1.3x; issue 35, item 7).

The cold listing and the check against the import floor are printed too, for
information.

    python bench/bench_startup.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import from_rounds, report  # noqa: E402


# The import floor plus the first pydantic model of a process, built and validated.
MODEL_FLOOR = ("import pydantic, pluggy, click\nfrom pydantic import BaseModel\n"
               "class Floor(BaseModel):\n    a: int = 1\n    b: list[str] = []\nFloor(a=2)")


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    pegboard = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache"), "XDG_CONFIG_HOME": str(root / "config"),
               "XDG_DATA_HOME": str(root / "data"), "PEGBOARD_POLICY": str(root / "no-policy.toml")}
        env.pop("PEGBOARD_CONFIG", None)
        # Compiled modules are cached as an installed package's are: with
        # PYTHONDONTWRITEBYTECODE set, every changed module would be compiled
        # again on every run, which no user's start-up pays.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        project = root / "project"
        project.mkdir()
        floor_cmd = [sys.executable, "-c", "import pydantic, pluggy, click"]
        model_floor_cmd = [sys.executable, "-c", MODEL_FLOOR]
        listing = [pegboard, "--cwd", str(project), "tools", "list"]
        check = [pegboard, "--cwd", str(project), "permissions", "check", "Read",
                 "--input", json.dumps({"file_path": str(project / "README.md")})]
        for cmd in (floor_cmd, model_floor_cmd, listing, check):
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)  # warm the OS caches
        times: dict[str, list[float]] = {"floor": [], "model": [], "warm": [], "cold": [], "check": []}
        for _ in range(args.rounds):
            times["floor"].append(wall(floor_cmd, env))
            times["model"].append(wall(model_floor_cmd, env))
            times["warm"].append(wall(listing, env))
            shutil.rmtree(root / "cache", ignore_errors=True)
            times["cold"].append(wall(listing, env))
            times["check"].append(wall(check, env))
    floor = statistics.median(times["floor"])
    print(f"import floor (pydantic, pluggy, click): {floor * 1000:7.1f} ms  (median of {args.rounds} rounds)")
    for key, label in (("warm", "tools list, warm cache"), ("cold", "tools list, no cache"),
                       ("check", "permissions check, no rules")):
        print(f"pegboard {label:<28} {statistics.median(times[key]) * 1000:7.1f} ms")
    def rounds(key: str, against: str = "floor") -> list[float]:
        return [t / f for t, f in zip(times[key], times[against])]

    model = statistics.median(times["model"])
    print(f"import floor plus one pydantic model:   {model * 1000:7.1f} ms  "
          f"({statistics.median(rounds('model')):.2f}x the import floor)")

    table = (f"import floor {floor * 1000:.0f} ms, model floor {model * 1000:.0f} ms, "
             f"cold tools list {statistics.median(times['cold']) * 1000:.0f} ms, "
             f"permissions check {statistics.median(times['check']) * 1000:.0f} ms")
    report(
        from_rounds("tools list, warm cache / import floor", rounds("warm"), 1.5),
        from_rounds("tools list, no cache / import plus one model", rounds("cold", "model"), 1.5, item="35.7",
                    note=table),
        from_rounds("permissions check, no rules / import plus one model", rounds("check", "model"), 1.3,
                    item="35.7"),
        from_rounds("tools list, no cache / import floor", rounds("cold"), 0.0, bound="info"),
        from_rounds("permissions check, no rules / import floor", rounds("check"), 0.0, bound="info"),
    )


if __name__ == "__main__":
    main()

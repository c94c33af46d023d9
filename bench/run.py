"""Run every bench and print one table of ratios with their targets.

    uv run python bench/run.py [--only web,fs] [--list]

Each bench runs as its own process, with its own empty TMPDIR: whatever it
leaves there is reported as a bench that did not clean up after itself. Its
XDG folders and system policy are empty ones of its own too, so the user's
pegboard config, data and cache neither change the figures nor get written. Its
full output goes to bench/.out/<bench>.txt. A ratio is measured against a
baseline in the same run, so the table compares across machines; a row whose
rounds spread widely says the machine was busy, and a target missed on such
a run is reported as noisy rather than as a failure.

Exit status: 0 when every bench ran and cleaned up and every target was met
(or missed only on a noisy run); 1 when a target was missed on a quiet run;
2 when a bench failed or left files behind.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _ratios import ENV, NOISY_SPREAD, Ratio  # noqa: E402

# Cheap and isolated first; the ones that start servers and sandboxes last.
BENCHES = ["startup", "permissions", "pipeline", "tracing", "fs", "web", "web_worst", "audit", "listing", "subtasks",
           "schedule", "shell", "mcp", "mcp_catalogue", "catalogue", "mcp_servers", "serve_team"]
TIMEOUT_S = 1200
# The items of the issues the benches answer, each with the rows tagged with it (Ratio.item):
# printed after the table, one block per item, so that an item without a row shows.
ITEMS = {
    "35.1": "a sandboxed Bash decision, flat in Read deny rules",
    "35.2": "the first MCP call, whatever the number of servers",
    "35.3": "the first catalogue with many tools",
    "35.4": "a long WebFetch page's first result inline",
    "35.5": "a new process's first decision with many rules",
    "35.6": "sessions list and audit list page; an empty audit filter uses an index",
    "35.7": "start-up against import plus one pydantic model",
    "35.8": "batches of cheap calls never slower than one after another",
}
ISOLATED_DIRS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


def run_one(name: str, out_dir: Path) -> tuple[list[Ratio], str | None, float]:
    """The ratios one bench reported, and what went wrong, if anything."""
    script = HERE / f"bench_{name}.py"
    tmp = Path(tempfile.mkdtemp(prefix=f"pegboard-bench-{name}-"))
    ratios_file = tmp.parent / f"{tmp.name}.ratios"
    # The user's own pegboard folders and policy stay out of every bench (an
    # audit or a rule there would change the figures, and a bench must not
    # write there): each bench starts from empty ones of its own.
    dirs = tmp.parent / f"{tmp.name}.dirs"
    env = {**os.environ, ENV: str(ratios_file), "TMPDIR": str(tmp), "PEGBOARD_POLICY": str(dirs / "no-policy.toml"),
           **{var: str(dirs / var.lower()) for var in ISOLATED_DIRS}}
    env.pop("PEGBOARD_CONFIG", None)
    log = out_dir / f"bench_{name}.txt"
    started = time.perf_counter()
    problem = None
    try:
        with open(log, "w", encoding="utf-8") as out:
            done = subprocess.run([sys.executable, str(script)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, cwd=HERE.parent)
        if done.returncode != 0:
            problem = f"exited {done.returncode} (see {log.relative_to(HERE.parent)})"
    except subprocess.TimeoutExpired:
        problem = f"did not finish within {TIMEOUT_S} s"
    left = sorted(p.name for p in tmp.iterdir())
    if left and problem is None:
        problem = f"left {len(left)} file(s) in its TMPDIR: {', '.join(left[:5])}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dirs, ignore_errors=True)
    ratios = []
    if ratios_file.exists():
        ratios = [Ratio(**json.loads(line)) for line in ratios_file.read_text().splitlines() if line.strip()]
        ratios_file.unlink()
    if not ratios and problem is None:
        problem = "reported no ratio"
    return ratios, problem, time.perf_counter() - started


def table(rows: list[tuple[str, Ratio]]) -> str:
    head = ("bench", "what", "ratio", "target", "rounds", "verdict")
    body = [(bench, r.what, f"{r.value:.2f}{r.unit}", r.target_text().removeprefix("target "),
             f"{r.low:.2f}-{r.high:.2f}" if r.low is not None and r.high is not None else "-", r.verdict())
            for bench, r in rows]
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def by_item(rows: list[tuple[str, Ratio]], chosen: list[str]) -> str:
    """The rows of each issue item (``ITEMS``), with its curve's table where a row carries one."""
    lines = []
    for item, title in ITEMS.items():
        tagged = [(bench, r) for bench, r in rows if r.item == item]
        lines.append(f"issue {item.replace('.', ', item ')}: {title}")
        if not tagged:
            lines.append("    no row (its bench was not run)" if len(chosen) < len(BENCHES) else "    NO ROW")
        for bench, r in tagged:
            lines.append(f"    {r.line()}  [bench_{bench}]")
            lines += [f"      {text}" for text in r.note.splitlines() if text.strip()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benches to run (default: all)")
    parser.add_argument("--list", action="store_true", help="name the benches and stop")
    args = parser.parse_args()
    if args.list:
        print("\n".join(BENCHES))
        return 0
    chosen = BENCHES if not args.only else [b.strip() for b in args.only.split(",") if b.strip()]
    unknown = [b for b in chosen if b not in BENCHES]
    if unknown:
        parser.error(f"unknown bench {', '.join(unknown)}; known: {', '.join(BENCHES)}")
    out_dir = HERE / ".out"
    out_dir.mkdir(exist_ok=True)
    rows: list[tuple[str, Ratio]] = []
    problems: list[str] = []
    for name in chosen:
        print(f"running bench_{name} ...", flush=True)
        ratios, problem, took = run_one(name, out_dir)
        rows += [(name, r) for r in ratios]
        note = f"  PROBLEM: {problem}" if problem else ""
        print(f"  {len(ratios)} ratio(s) in {took:.0f} s{note}", flush=True)
        if problem:
            problems.append(f"bench_{name}: {problem}")
    print()
    print(table(rows))
    print()
    print(by_item(rows, chosen))
    quiet_misses = [r for _, r in rows if not r.met and not r.noisy]
    noisy_misses = [r for _, r in rows if not r.met and r.noisy]
    print()
    print(f"{sum(r.met for _, r in rows)} of {len(rows)} targets met; full output in {out_dir}")
    if noisy_misses:
        print(f"{len(noisy_misses)} missed on a noisy run (rounds spread over {NOISY_SPREAD}x): rerun on a quieter machine.")
    for p in problems:
        print(p)
    if problems:
        return 2
    return 1 if quiet_misses else 0


if __name__ == "__main__":
    sys.exit(main())

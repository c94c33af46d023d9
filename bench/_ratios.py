"""One way for every bench to state a ratio, its target and its spread.

Each bench prints its own figures as before and also calls ``report`` for
the ratios that have a target. ``bench/run.py`` runs every bench with
``PEGBOARD_BENCH_RATIOS`` naming a file, collects what they reported there
(one JSON object a line) and prints them as one table.

A ratio is the median (or best) of several rounds measured in the same run;
``low`` and ``high`` are the rounds' extremes. When ``high`` is well above
``low`` the machine was busy during the run, and a missed target says so
instead of failing: shared machines are noisy, and the figure to trust is
the one from a quiet rerun.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["NOISY_SPREAD", "Ratio", "from_rounds", "report"]

ENV = "PEGBOARD_BENCH_RATIOS"
# A run whose slowest round was this much slower than its fastest was disturbed.
NOISY_SPREAD = 1.5


@dataclass(frozen=True)
class Ratio:
    what: str
    value: float
    target: float
    bound: Literal["at most", "under", "at least", "over", "info"] = "at most"
    low: float | None = None
    high: float | None = None
    unit: str = "x"
    note: str = ""
    # The issue item the row answers ("35.1": issue 35, item 1), for bench/run.py's table per item.
    item: str = ""

    @property
    def met(self) -> bool:
        return {
            "at most": self.value <= self.target,
            "under": self.value < self.target,
            "at least": self.value >= self.target,
            "over": self.value > self.target,
            "info": True,
        }[self.bound]

    @property
    def noisy(self) -> bool:
        if self.low is None or self.high is None or self.low <= 0:
            return False
        return self.high / self.low > NOISY_SPREAD

    def verdict(self) -> str:
        if self.bound == "info":
            return "for information"
        if self.met:
            return "met"
        return "missed (noisy run: rerun before trusting it)" if self.noisy else "MISSED"

    def line(self) -> str:
        spread = f"  (rounds {self.low:.2f}-{self.high:.2f})" if self.low is not None and self.high is not None else ""
        return f"{self.what}: {self.value:.2f}{self.unit}, {self.target_text()}: {self.verdict()}{spread}"

    def target_text(self) -> str:
        return "no target" if self.bound == "info" else f"target {self.bound} {self.target:g}{self.unit}"


def from_rounds(what: str, rounds: Sequence[float], target: float, **kw: object) -> Ratio:
    """The median of per-round ratios, with the rounds' spread."""
    return Ratio(what, statistics.median(rounds), target, low=min(rounds), high=max(rounds), **kw)  # type: ignore[arg-type]


def report(*ratios: Ratio) -> None:
    """Print each ratio against its target and, under bench/run.py, hand it on."""
    for ratio in ratios:
        print(ratio.line())
    target = os.environ.get(ENV)
    if target:
        with open(target, "a", encoding="utf-8") as out:
            for ratio in ratios:
                out.write(json.dumps(asdict(ratio)) + "\n")

"""bench/run.py's table: a ratio's verdict against its target, and a noisy run said so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

from _ratios import Ratio, from_rounds, report  # noqa: E402


def test_verdicts_follow_the_bound_and_the_spread() -> None:
    assert Ratio("a", 19.9, 20).verdict() == "met"
    assert Ratio("a", 20.1, 20, low=19.0, high=21.0).verdict() == "MISSED"
    assert Ratio("a", 20.1, 20, low=10.0, high=40.0).verdict().startswith("missed (noisy run")
    assert Ratio("a", 30.0, 30, bound="under").verdict() == "MISSED"
    assert Ratio("a", 32, 10, bound="over", unit="").met and not Ratio("a", 10, 10, bound="over").met
    assert Ratio("a", 99.0, 0, bound="info").verdict() == "for information"
    rounds = from_rounds("a", [1.0, 3.0, 2.0], 2.5)
    assert (rounds.value, rounds.low, rounds.high, rounds.met) == (2.0, 1.0, 3.0, True)


def test_report_hands_ratios_to_the_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ratios.jsonl"
    monkeypatch.setenv("PEGBOARD_BENCH_RATIOS", str(out))
    report(Ratio("Grep / rg", 3.9, 5.0), Ratio("load / none", 31.0, 3.0, low=27.0, high=33.0))
    assert "Grep / rg: 3.90x, target at most 5x: met" in capsys.readouterr().out
    rows = [Ratio(**json.loads(line)) for line in out.read_text().splitlines()]
    assert [r.verdict() for r in rows] == ["met", "MISSED"]


def test_the_runner_names_every_bench_there_is() -> None:
    listed = subprocess.run([sys.executable, str(BENCH / "run.py"), "--list"], capture_output=True, text=True,
                            check=True).stdout.split()
    assert sorted(listed) == sorted(p.stem.removeprefix("bench_") for p in BENCH.glob("bench_*.py"))

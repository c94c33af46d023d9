"""bench/run.py's table: a ratio's verdict against its target, and a noisy run said so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
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


PROBE = '''
import json, os, sys
from pathlib import Path
sys.path.insert(0, {bench!r})
from _ratios import Ratio, report
seen = {{k: os.environ.get(k) for k in ("TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                                        "XDG_STATE_HOME", "PEGBOARD_POLICY", "PEGBOARD_CONFIG")}}
Path({seen!r}).write_text(json.dumps(seen))
for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
    Path(os.environ[var], "pegboard").mkdir(parents=True)
if os.environ.get("LEAVE"):
    Path(os.environ["TMPDIR"], "left-behind").write_text("x")
report(Ratio("probe", 1.0, 2.0))
'''


@pytest.mark.parametrize("leave", [False, True])
def test_each_bench_runs_in_its_own_folders_and_leftovers_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    leave: bool) -> None:
    import run

    benches = tmp_path / "benches"
    benches.mkdir()
    seen_file = tmp_path / "seen.json"
    (benches / "bench_probe.py").write_text(PROBE.format(bench=str(BENCH), seen=str(seen_file)))
    monkeypatch.setattr(run, "HERE", benches)
    monkeypatch.setenv("PEGBOARD_CONFIG", str(tmp_path / "users-own.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "users-own-config"))
    if leave:
        monkeypatch.setenv("LEAVE", "1")
    out = tmp_path / "out"
    out.mkdir()
    ratios, problem, _ = run.run_one("probe", out)
    assert [r.what for r in ratios] == ["probe"]
    assert problem == ("left 1 file(s) in its TMPDIR: left-behind" if leave else None)
    seen = json.loads(seen_file.read_text())
    assert seen["PEGBOARD_CONFIG"] is None
    own = [Path(seen[k]) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
                                   "PEGBOARD_POLICY")]
    assert len({p.parent for p in own}) == 1 and Path(seen["TMPDIR"]) not in own[0].parents
    # The bench's folders go when it ends, what it made in them (not a leftover) included.
    assert not Path(seen["TMPDIR"]).exists() and not own[0].parent.exists()
    assert not (tmp_path / "users-own-config").exists()

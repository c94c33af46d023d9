"""bubblewrap's trial sandbox runs once per boot, user and binary: its answer is kept in pegboard's
config cache, read back only from a file of this user's that nobody else may write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pegboard.plugins.shell import _confine


@pytest.fixture
def trials(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    ran: list[str] = []

    def fake_trial(exe: str) -> str | None:
        ran.append(exe)
        return None

    monkeypatch.setattr(_confine, "_bwrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(_confine, "_bwrap_trial", fake_trial)
    monkeypatch.setattr(_confine, "_trial_key", lambda exe: [exe, 1, 2, 3, "boot-a", os.getuid()])
    _confine.bwrap_works.cache_clear()
    yield ran
    _confine.bwrap_works.cache_clear()


def test_a_new_process_takes_the_kept_answer(trials: list[str]) -> None:
    assert _confine.bwrap_works() is None and trials == ["/usr/bin/bwrap"]
    _confine.bwrap_works.cache_clear()  # as a new process
    assert _confine.bwrap_works() is None and trials == ["/usr/bin/bwrap"]
    kept = json.loads(_confine._trial_file().read_text())
    assert kept == {"key": ["/usr/bin/bwrap", 1, 2, 3, "boot-a", os.getuid()], "why": None}
    assert _confine._trial_file().stat().st_mode & 0o777 == 0o600


def test_another_boot_or_binary_runs_the_trial_again(trials: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _confine.bwrap_works()
    monkeypatch.setattr(_confine, "_trial_key", lambda exe: [exe, 1, 2, 3, "boot-b", os.getuid()])
    _confine.bwrap_works.cache_clear()
    _confine.bwrap_works()
    assert len(trials) == 2


def test_a_file_others_may_write_is_not_believed(trials: list[str]) -> None:
    path: Path = _confine._trial_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": ["/usr/bin/bwrap", 1, 2, 3, "boot-a", os.getuid()], "why": "planted"}))
    path.chmod(0o666)
    assert _confine.bwrap_works() is None and len(trials) == 1
    path.write_text("not json")
    path.chmod(0o600)
    _confine.bwrap_works.cache_clear()
    assert _confine.bwrap_works() is None and len(trials) == 2

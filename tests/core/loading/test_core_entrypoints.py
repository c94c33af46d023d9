"""The ``pegboard`` command reads the installed entry points once, before any
pydantic model is built (issue 35, item 7): pydantic is told it has no
plugins only when no distribution offers one, so an installed pydantic
plugin still loads; pegboard's own plugins are the same either way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pegboard._loading.entry_points as entrypoints

PEGBOARD = str(Path(sys.executable).parent / "pegboard")


@pytest.fixture
def loader(monkeypatch: pytest.MonkeyPatch) -> object:
    """pydantic's plugin loader as a process that has not scanned yet finds it."""
    from pydantic.plugin import _loader

    monkeypatch.setattr(_loader, "_plugins", None)
    monkeypatch.setattr(entrypoints, "_FIRST", None)
    monkeypatch.setattr(entrypoints, "_COMMAND", False)
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    return _loader


def test_no_pydantic_plugin_installed_is_what_pydantic_is_told(loader: object,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entrypoints, "_scan", lambda: ([], False))
    entrypoints.quiet_pydantic_plugins()  # not the pegboard command (a host, a test): nothing read or told
    assert loader._plugins is None  # type: ignore[attr-defined]
    entrypoints.prepare_command()
    entrypoints.quiet_pydantic_plugins()
    assert loader._plugins == {}  # type: ignore[attr-defined]


def test_pydantic_scans_for_itself_when_a_plugin_is_installed_or_it_is_told_to(
        loader: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entrypoints, "_scan", lambda: ([], True))
    entrypoints.prepare_command()
    entrypoints.quiet_pydantic_plugins()
    assert loader._plugins is None  # type: ignore[attr-defined]
    monkeypatch.setattr(entrypoints, "_scan", lambda: ([], False))
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "somename")
    entrypoints.prepare_command()
    entrypoints.quiet_pydantic_plugins()
    assert loader._plugins is None  # type: ignore[attr-defined]


def test_the_first_load_takes_the_command_s_scan_and_later_ones_read_again(
        loader: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import entry_points

    entrypoints.prepare_command()
    entrypoints.quiet_pydantic_plugins()
    expected = sorted((ep.name, ep.value, ep.dist.name if ep.dist else None)
                      for ep in entry_points(group="pegboard"))
    scans = []
    real = entrypoints._scan
    monkeypatch.setattr(entrypoints, "_scan", lambda: scans.append(1) or real())

    def found() -> list[tuple[str, str, str | None]]:
        return sorted((i.name, i.value, i.distribution) for i in entrypoints.installed_plugins())

    assert found() == expected and scans == []
    assert found() == expected and scans == [1]


def test_the_next_command_takes_what_was_kept_until_a_sys_path_folder_changes(
        loader: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scans = []
    real = entrypoints._scan
    monkeypatch.setattr(entrypoints, "_scan", lambda: scans.append(1) or real())
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])

    def command() -> list[str]:
        entrypoints.prepare_command()
        entrypoints.quiet_pydantic_plugins()
        return sorted(i.name for i in entrypoints.installed_plugins())

    first = command()
    assert scans == [1] and "fs" in first
    from pegboard.paths import config_dir

    kept = list((config_dir() / "cache").glob("entrypoints-*.json"))
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o777 == 0o600
    assert command() == first and scans == [1]  # kept: nothing read
    _distribution(site, "latecomer", "[pegboard]\nlate = latecomer_mod\n", "")  # an install changes the folder
    assert command() == sorted([*first, "late"]) and scans == [1, 1]
    if os.geteuid() == 0:  # a kept file someone else owns is not read (it names modules to import)
        os.chown(kept[0], 65534, 65534)
        assert command() == sorted([*first, "late"]) and scans == [1, 1, 1]


def _distribution(site: Path, name: str, entry_points: str, module: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    (site / f"{name}_mod.py").write_text(module)


@pytest.mark.slow
@pytest.mark.parametrize("offered", [True, False])
def test_the_command_loads_an_installed_pydantic_plugin(tmp_path: Path, offered: bool) -> None:
    site = tmp_path / "site"
    marker = tmp_path / "loaded"
    group = "[pydantic]" if offered else "[console_scripts]"
    _distribution(site, "pydplug", f"{group}\nmarker = pydplug_mod:plugin\n",
                  f"from pathlib import Path\nPath({str(marker)!r}).write_text('yes')\n\n\nclass Plugin:\n"
                  "    def new_schema_validator(self, *args, **kwargs):\n        return None, None, None\n\n\n"
                  "plugin = Plugin()\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run([PEGBOARD, "--cwd", str(tmp_path), "permissions", "check", "Read", "--input",
                           '{"file_path": "x"}'], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert marker.exists() is offered, done.stderr

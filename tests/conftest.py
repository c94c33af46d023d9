"""Every test runs with its own config, data and policy locations."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("PEGBOARD_POLICY", str(home / "no-policy.toml"))
    for name in ("PEGBOARD_CONFIG", "PEGBOARD_PLUGINS", "PEGBOARD_WEB_SEARCH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, as pegboard does."""
    return "asyncio"

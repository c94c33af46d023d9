"""pegboard's own folders and the system policy file's place (public through
``pegboard.paths``); kept apart from config loading so that light modules,
the public API among them, can name them."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["config_dir", "data_dir", "policy_path"]


def config_dir() -> Path:
    """pegboard's user config folder (``config.toml``, ``granted.toml``, ``descriptions/``)."""
    return Path(platformdirs.user_config_dir("pegboard"))


def data_dir() -> Path:
    """pegboard's user data folder (sessions' files, plugins' stores)."""
    return Path(platformdirs.user_data_dir("pegboard"))


def policy_path() -> Path:
    return Path(os.environ.get("PEGBOARD_POLICY", "/etc/pegboard/policy.toml"))

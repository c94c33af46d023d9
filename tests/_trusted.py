"""Trusting a project folder in tests, exactly as ``pegboard trust`` does.

A test that writes a project's ``.pegboard/config.toml`` (or other project
files) and means them to apply, as their trusted owner would, trusts the
folder through ``trust`` (the ``trust_project`` fixture, or the helpers that
write project config: ``PluginFactory.config``, ``Project.project_config``).
A test of what an untrusted folder gets does not. The trusted-folders file
lives in each test's own config folder (``isolated_env``), so nothing leaks
from one test to another.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["trust"]


def trust(root: Path) -> Path:
    from pegboard.testing import Project

    return Project(root).trust()

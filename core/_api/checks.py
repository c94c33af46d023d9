"""Health checks for ``pegboard doctor``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One line of ``pegboard doctor``: what ``pegboard_doctor`` returns.

    pegboard prefixes the name with the plugin's:
    ``Check("git", "ok", "/usr/bin/git")`` from plugin ``hello`` is shown as ``hello: git`` (and
    ``"name": "hello: git"`` in ``--json``), so names need only be unique in
    the plugin. One ``fail`` makes ``pegboard doctor`` exit 1.
    """

    name: str
    """What was checked, short (``"git"``, ``"server github"``); shown after ``<plugin>: ``."""
    status: Literal["ok", "warn", "fail"]
    """``"ok"``, ``"warn"`` (works, but an operator should look) or ``"fail"`` (broken)."""
    detail: str = ""
    """What was found, or what to do: the file, key or command that fixes it."""

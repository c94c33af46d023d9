"""Health checks for ``pegboard doctor``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Check"]


@dataclass(frozen=True)
class Check:
    """One line of ``pegboard doctor``: ``ok``, ``warn`` or ``fail``."""

    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str = ""

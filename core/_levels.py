"""Permission levels, kept apart so that light modules can use them."""

from __future__ import annotations

from typing import Literal

__all__ = ["LEVELS", "Level"]

Level = Literal["none", "read", "workspace", "unrestricted"]
LEVELS: tuple[Level, ...] = ("none", "read", "workspace", "unrestricted")

"""Permission levels, kept apart so that light modules can use them."""

from __future__ import annotations

from typing import Literal

__all__ = ["ACCESSES", "Access", "LEVELS", "Level", "narrowest_access"]

Level = Literal["none", "read", "workspace", "unrestricted"]
LEVELS: tuple[Level, ...] = ("none", "read", "workspace", "unrestricted")

# What a session may do with one tool, narrowest first: nothing, only what the
# tool counts as reading, or everything it offers (Tool.subagents, Session.child's access).
Access = Literal["none", "read", "full"]
ACCESSES: tuple[Access, ...] = ("none", "read", "full")


def narrowest_access(*values: Access) -> Access:
    """The narrowest of ``values`` (``"full"`` for none)."""
    return min(values, key=ACCESSES.index, default="full")

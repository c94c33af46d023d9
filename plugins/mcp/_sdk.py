"""Whether the MCP SDK this plugin needs is installed, said without importing it.

pegboard installs the SDK as an extra (``pegboard[mcp]``; the project's own
``uv run`` commands include it), so that pegboard also installs beside
frameworks that still pin ``mcp<2``. Without it, only MCP servers and
``pegboard serve`` are missing, and they say how to get it.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["NEEDED", "sdk_problem"]

NEEDED = (2, 3)
INSTALL = "pip install 'pegboard[mcp]'"


@lru_cache(maxsize=1)
def sdk_problem() -> str | None:
    """None when a usable MCP SDK is installed; else what is wrong and how to fix it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mcp")
    except PackageNotFoundError:
        return f"the MCP SDK is not installed ({INSTALL} adds it)"
    parts = tuple(int(p) for p in found.split(".")[:2] if p.isdigit())
    if parts < NEEDED:
        return (f"mcp {found} is installed and pegboard's MCP support needs mcp 2.3 or newer ({INSTALL}; a package "
                "that pins mcp<2 needs an environment of its own for that)")
    return None

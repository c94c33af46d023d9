"""The hooks the mcp plugin declares (``pegboard_add_hooks``): what
``pegboard serve`` offers an MCP client as prompts comes from any plugin that
implements them (the skills plugin offers its skills)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pegboard import hookspec


@hookspec
def pegboard_prompts(context: Any) -> Iterable[dict[str, Any]] | None:
    """Prompts this plugin offers: ``{"name", "description", "arguments":
    [{"name", "description", "required"}]}`` each. ``context`` is a
    PluginContext of the toolbox serving them (its root, config dir, trust)."""


@hookspec(firstresult=True)
def pegboard_prompt(context: Any, name: str, arguments: dict[str, str]) -> str | None:
    """The text of prompt ``name`` with ``arguments`` filled in, or None when
    this plugin has no prompt of that name."""

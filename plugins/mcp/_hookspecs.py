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


@hookspec(firstresult=True)
def pegboard_mcp_sample(session: Any, server: str, params: dict[str, Any]) -> Any:
    """Host: answer MCP server ``server``'s sampling request
    (``sampling/createMessage``) with the host's model, or return None to
    pass (the server is told the request was declined). May be a coroutine.

    ``params`` is the request's params as MCP puts them on the wire
    (``messages``, ``systemPrompt``, ``maxTokens``, ``modelPreferences``, ...).
    Return a ``CreateMessageResult`` as JSON (``{"role": "assistant",
    "content": {"type": "text", "text": ...}, "model": ..., "stopReason":
    ...}``) or the reply's text alone. pegboard declares the sampling
    capability to servers only when something implements this hook. Show the
    person what a server asks for before spending their model on it: the
    MCP specification wants a human able to deny it."""

"""An in-process MCP server of a session's tools for the Claude Agent SDK:
``mcp_server(session)``.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from pegboard.integrations.claude_agent_sdk import mcp_server

    options = ClaudeAgentOptions(mcp_servers={"pegboard": mcp_server(session)},
                                 allowed_tools=["mcp__pegboard__*"])   # pegboard decides, not the CLI

The tools run in this process, through the session's whole pipeline:
pegboard's permission engine decides every call, and an ask goes to the
session's ``pegboard_ask`` host (``Answer.later()`` makes it a pending call).
Claude sees them as ``mcp__pegboard__<Tool>``.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ._common import offered_tools, require, result_parts

require("claude_agent_sdk", "claude-agent-sdk")

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool, create_sdk_mcp_server  # noqa: E402

if TYPE_CHECKING:
    from .._session import Session

__all__ = ["mcp_server"]


def mcp_server(session: Session, *, name: str = "pegboard") -> McpSdkServerConfig:
    """The server config for ``ClaudeAgentOptions.mcp_servers`` (the
    catalogue as it stands: deferred tools through ToolSearch)."""
    from importlib.metadata import version

    tools = [SdkMcpTool(name=t.name, description=t.description, input_schema=t.schema,
                        handler=_handler(session, t.name))
             for t in offered_tools(session, defer_loading=False)]
    return create_sdk_mcp_server(name, version=version("pegboard"), tools=tools)


def _handler(session: Session, name: str) -> Any:
    async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call(name, arguments)
        content = [{"type": "text", "text": value} if kind == "text" else
                   {"type": "image", "data": base64.b64encode(value[1]).decode(), "mimeType": value[0]}
                   for kind, value in result_parts(result)]
        return {"content": content, "is_error": result.is_error}

    return handle

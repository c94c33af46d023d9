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

The server offers every tool the session may come to offer, deferred ones
included, and no ToolSearch: the SDK's in-process server cannot tell the CLI
that its tools changed (it drops ``notifications/tools/list_changed``), so a
tool ToolSearch loaded later would never be callable. Claude Code defers MCP
tools behind its own tool search (unless ``ENABLE_TOOL_SEARCH=false``).

Results: text, images and the error flag. The SDK drops binary resources
from an in-process tool's result, so a PDF is described in text; the output
a call streams is not passed on either (the SDK drops progress notifications).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ._common import offered_tools, require, result_parts

require("claude_agent_sdk", "claude-agent-sdk")

from claude_agent_sdk import McpSdkServerConfig, SdkMcpTool, create_sdk_mcp_server  # noqa: E402

if TYPE_CHECKING:
    from .._engine.session import Session

__all__ = ["mcp_server"]


def mcp_server(session: Session, *, name: str = "pegboard") -> McpSdkServerConfig:
    """The server config for ``ClaudeAgentOptions.mcp_servers``: every tool
    the session offers, deferred ones with their schemas."""
    from importlib.metadata import version

    tools = [SdkMcpTool(name=t.name, description=t.description, input_schema=t.schema,
                        handler=_handler(session, t.name))
             for t in offered_tools(session, defer_loading=True)]
    return create_sdk_mcp_server(name, version=version("pegboard"), tools=tools)


def _handler(session: Session, name: str) -> Any:
    async def handle(arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call(name, arguments)
        content: list[dict[str, Any]] = []
        for kind, value in result_parts(result):
            if kind == "text":
                content.append({"type": "text", "text": value})
            elif kind == "image":
                content.append({"type": "image", "data": base64.b64encode(value[1]).decode(), "mimeType": value[0]})
            else:
                content.append({"type": "text", "text": f"[the PDF {value[0]} ({len(value[1]):,} bytes) is not shown: "
                                                        "the Claude Agent SDK passes no documents from its "
                                                        "in-process tools; read it as text instead]"})
        return {"content": content, "is_error": result.is_error}

    return handle

"""pegboard: tools for LLM agents, delivered through plugins.

The public surface is what ``__all__`` lists; everything in an
underscore-prefixed module is private.
"""

from ._catalogue import Catalogue, CatalogueTool
from ._config import ConfigError, Settings
from ._decisions import Answer, Decision, PermissionRequest, Rule, Vote
from ._doctor import Check
from ._hookspecs import hookimpl, hookspec
from ._plugins import PluginContext
from ._policy import Policy, clamp_policy, policy_for
from ._session import CallInfo, Grant, PreCall, Session
from ._tools import ImageContent, ResourceContent, TextContent, Tool, ToolContext, ToolResult
from ._toolbox import Toolbox

__all__ = [
    "Answer",
    "CallInfo",
    "Catalogue",
    "CatalogueTool",
    "Check",
    "ConfigError",
    "Decision",
    "Grant",
    "ImageContent",
    "PermissionRequest",
    "PluginContext",
    "Policy",
    "PreCall",
    "ResourceContent",
    "Rule",
    "Session",
    "Settings",
    "TextContent",
    "Tool",
    "ToolContext",
    "ToolResult",
    "Toolbox",
    "Vote",
    "clamp_policy",
    "hookimpl",
    "hookspec",
    "policy_for",
]

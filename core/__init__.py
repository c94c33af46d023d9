"""pegboard: tools for LLM agents, delivered through plugins.

The public API is what ``__all__`` lists here and in the public submodules
``pegboard.paths`` (path helpers, pegboard's folders) and ``pegboard.cli``
(plugin commands); everything in an underscore-prefixed module is private.
Names are imported on first use so that ``import pegboard`` (and the CLI's
quick paths) stay cheap.
"""

import typing as _typing

from ._hookspecs import hookimpl, hookspec
from ._version import API_VERSION

if _typing.TYPE_CHECKING:
    from ._approvals_page import ApprovalsPage, Approver, PageRequest
    from ._catalogue import Catalogue, CatalogueTool
    from ._clients import Client
    from ._streams import CallEvent, CallStream
    from ._sync import SyncCallStream, SyncSession
    from ._config import ConfigError, Settings
    from ._decisions import (Answer, CompiledRule, Decision, Grant, PermissionRequest, Rule, RuleMatcher,
                             RuleSamples, ToolNamespace, Vote)
    from ._plugincheck import PluginCheck, check_plugin
    from ._doctor import Check
    from ._matchers import InputFieldMatcher
    from ._plugin_context import PluginContext, PluginStore, StoreSchema
    from ._plugin_session import PluginSession
    from ._policy import Policy, clamp_policy, policy_for
    from ._scope import UserScope
    from ._calls import CallInfo, PreCall
    from ._session import Session
    from ._store import StoreError
    from ._toolbox import Toolbox
    from ._tools import Absent, Content, ImageContent, ResourceContent, TextContent, Tool, ToolContext, ToolResult

_LAZY = {
    "Absent": "pegboard._tools",
    "Answer": "pegboard._decisions",
    "ApprovalsPage": "pegboard._approvals_page",
    "Approver": "pegboard._approvals_page",
    "CallInfo": "pegboard._calls",
    "CallEvent": "pegboard._streams",
    "CallStream": "pegboard._streams",
    "Catalogue": "pegboard._catalogue",
    "CatalogueTool": "pegboard._catalogue",
    "Check": "pegboard._doctor",
    "Client": "pegboard._clients",
    "CompiledRule": "pegboard._decisions",
    "ConfigError": "pegboard._config",
    "Content": "pegboard._tools",
    "Decision": "pegboard._decisions",
    "Grant": "pegboard._decisions",
    "ImageContent": "pegboard._tools",
    "InputFieldMatcher": "pegboard._matchers",
    "PageRequest": "pegboard._approvals_page",
    "PermissionRequest": "pegboard._decisions",
    "PluginCheck": "pegboard._plugincheck",
    "PluginContext": "pegboard._plugin_context",
    "PluginSession": "pegboard._plugin_session",
    "PluginStore": "pegboard._plugin_context",
    "Policy": "pegboard._policy",
    "PreCall": "pegboard._calls",
    "ResourceContent": "pegboard._tools",
    "Rule": "pegboard._decisions",
    "RuleMatcher": "pegboard._decisions",
    "RuleSamples": "pegboard._decisions",
    "Session": "pegboard._session",
    "Settings": "pegboard._config",
    "SyncCallStream": "pegboard._sync",
    "SyncSession": "pegboard._sync",
    "StoreError": "pegboard._store",
    "StoreSchema": "pegboard._plugin_context",
    "TextContent": "pegboard._tools",
    "Tool": "pegboard._tools",
    "ToolContext": "pegboard._tools",
    "ToolNamespace": "pegboard._decisions",
    "ToolResult": "pegboard._tools",
    "Toolbox": "pegboard._toolbox",
    "UserScope": "pegboard._scope",
    "check_plugin": "pegboard._plugincheck",
    "Vote": "pegboard._decisions",
    "clamp_policy": "pegboard._policy",
    "policy_for": "pegboard._policy",
}

# Written out, not computed: type checkers read only a literal list as the
# module's explicit exports (mypy --strict in a plugin author's project);
# tests/test_core_api.py holds it to _LAZY's names and the three above.
__all__ = [
    "API_VERSION", "Absent", "Answer", "ApprovalsPage", "Approver", "CallEvent", "CallInfo", "CallStream",
    "Catalogue", "CatalogueTool", "Check", "Client", "CompiledRule", "ConfigError", "Content", "Decision", "Grant",
    "ImageContent", "InputFieldMatcher", "PageRequest", "PermissionRequest", "PluginCheck", "PluginContext",
    "PluginSession", "PluginStore", "Policy", "PreCall", "ResourceContent", "Rule", "RuleMatcher", "RuleSamples",
    "Session", "Settings", "StoreError", "StoreSchema", "SyncCallStream", "SyncSession", "TextContent", "Tool",
    "ToolContext", "ToolNamespace", "ToolResult", "Toolbox", "UserScope", "Vote", "check_plugin", "clamp_policy",
    "hookimpl", "hookspec", "policy_for",
]


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pegboard' has no attribute {name!r}")
    import importlib

    value = vars(importlib.import_module(module))[name]
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

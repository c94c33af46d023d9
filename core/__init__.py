"""pegboard: tools for LLM agents, delivered through plugins.

The public API is what ``__all__`` lists here and in the public submodules
``pegboard.paths`` (path helpers, pegboard's folders) and ``pegboard.cli``
(plugin commands); everything in an underscore-prefixed module is private.
Names are imported on first use so that ``import pegboard`` (and the CLI's
quick paths) stay cheap.
"""

import typing as _typing

from ._api.hookspecs import hookimpl, hookspec
from ._api.version import API_VERSION
from ._util.deprecation import keep_old_module_paths as _keep_old

_keep_old()

if _typing.TYPE_CHECKING:
    from ._cli.approvals_page import ApprovalsPage, Approver, PageRequest
    from ._api.catalogue import Catalogue, CatalogueTool
    from ._api.clients import Client
    from ._engine.streams import CallEvent, CallStream
    from ._engine.sync_facade import SyncCallStream, SyncSession
    from ._loading.config import ConfigError, Settings
    from ._api.decisions import (Answer, CompiledRule, Decision, Grant, PermissionRequest, Rule, RuleMatcher,
                             RuleSamples, ToolNamespace, Vote)
    from ._engine.plugin_check import PluginCheck, check_plugin
    from ._api.checks import Check
    from ._api.matchers import InputFieldMatcher
    from ._api.plugin_context import PluginContext, PluginStore, StoreSchema
    from ._api.plugin_session import PluginSession
    from ._api.policy import Policy, clamp_policy, policy_for
    from ._loading.scope import UserScope
    from ._api.calls import CallInfo, PreCall
    from ._engine.session import Session
    from ._services.store import StoreError
    from ._engine.toolbox import Toolbox
    from ._api.tools import Absent, Content, ImageContent, ResourceContent, TextContent, Tool, ToolContext, ToolResult

_LAZY = {
    "Absent": "pegboard._api.tools",
    "Answer": "pegboard._api.decisions",
    "ApprovalsPage": "pegboard._cli.approvals_page",
    "Approver": "pegboard._cli.approvals_page",
    "CallInfo": "pegboard._api.calls",
    "CallEvent": "pegboard._engine.streams",
    "CallStream": "pegboard._engine.streams",
    "Catalogue": "pegboard._api.catalogue",
    "CatalogueTool": "pegboard._api.catalogue",
    "Check": "pegboard._api.checks",
    "Client": "pegboard._api.clients",
    "CompiledRule": "pegboard._api.decisions",
    "ConfigError": "pegboard._loading.config",
    "Content": "pegboard._api.tools",
    "Decision": "pegboard._api.decisions",
    "Grant": "pegboard._api.decisions",
    "ImageContent": "pegboard._api.tools",
    "InputFieldMatcher": "pegboard._api.matchers",
    "PageRequest": "pegboard._cli.approvals_page",
    "PermissionRequest": "pegboard._api.decisions",
    "PluginCheck": "pegboard._engine.plugin_check",
    "PluginContext": "pegboard._api.plugin_context",
    "PluginSession": "pegboard._api.plugin_session",
    "PluginStore": "pegboard._api.plugin_context",
    "Policy": "pegboard._api.policy",
    "PreCall": "pegboard._api.calls",
    "ResourceContent": "pegboard._api.tools",
    "Rule": "pegboard._api.decisions",
    "RuleMatcher": "pegboard._api.decisions",
    "RuleSamples": "pegboard._api.decisions",
    "Session": "pegboard._engine.session",
    "Settings": "pegboard._loading.config",
    "SyncCallStream": "pegboard._engine.sync_facade",
    "SyncSession": "pegboard._engine.sync_facade",
    "StoreError": "pegboard._services.store",
    "StoreSchema": "pegboard._api.plugin_context",
    "TextContent": "pegboard._api.tools",
    "Tool": "pegboard._api.tools",
    "ToolContext": "pegboard._api.tools",
    "ToolNamespace": "pegboard._api.decisions",
    "ToolResult": "pegboard._api.tools",
    "Toolbox": "pegboard._engine.toolbox",
    "UserScope": "pegboard._loading.scope",
    "check_plugin": "pegboard._engine.plugin_check",
    "Vote": "pegboard._api.decisions",
    "clamp_policy": "pegboard._api.policy",
    "policy_for": "pegboard._api.policy",
}

# Written out, not computed: type checkers read only a literal list as the
# module's explicit exports (mypy --strict in a plugin author's project);
# tests/contract/test_core_api.py holds it to _LAZY's names and the three above.
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

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
    from ._catalogue import Catalogue, CatalogueTool
    from ._config import ConfigError, Settings
    from ._decisions import (Answer, CompiledRule, Decision, PermissionRequest, Rule, RuleMatcher, RuleSamples,
                             ToolNamespace, Vote)
    from ._plugincheck import PluginCheck, check_plugin
    from ._doctor import Check
    from ._matchers import InputFieldMatcher
    from ._plugins import PluginContext
    from ._policy import Policy, clamp_policy, policy_for
    from ._scope import UserScope
    from ._calls import CallInfo, PreCall
    from ._session import Grant, Session
    from ._store import PluginStore, StoreError, StoreSchema
    from ._toolbox import Toolbox
    from ._tools import Absent, Content, ImageContent, ResourceContent, TextContent, Tool, ToolContext, ToolResult

_LAZY = {
    "Absent": "_tools",
    "Answer": "_decisions",
    "CallInfo": "_calls",
    "Catalogue": "_catalogue",
    "CatalogueTool": "_catalogue",
    "Check": "_doctor",
    "CompiledRule": "_decisions",
    "ConfigError": "_config",
    "Content": "_tools",
    "Decision": "_decisions",
    "Grant": "_session",
    "ImageContent": "_tools",
    "InputFieldMatcher": "_matchers",
    "PermissionRequest": "_decisions",
    "PluginCheck": "_plugincheck",
    "PluginContext": "_plugins",
    "PluginStore": "_store",
    "Policy": "_policy",
    "PreCall": "_calls",
    "ResourceContent": "_tools",
    "Rule": "_decisions",
    "RuleMatcher": "_decisions",
    "RuleSamples": "_decisions",
    "Session": "_session",
    "Settings": "_config",
    "StoreError": "_store",
    "StoreSchema": "_store",
    "TextContent": "_tools",
    "Tool": "_tools",
    "ToolContext": "_tools",
    "ToolNamespace": "_decisions",
    "ToolResult": "_tools",
    "Toolbox": "_toolbox",
    "UserScope": "_scope",
    "check_plugin": "_plugincheck",
    "Vote": "_decisions",
    "clamp_policy": "_policy",
    "policy_for": "_policy",
}

__all__ = sorted([*_LAZY, "API_VERSION", "hookimpl", "hookspec"])


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pegboard' has no attribute {name!r}")
    import importlib

    value = vars(importlib.import_module(f"pegboard.{module}"))[name]
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

"""The shell plugin: Bash, Monitor, TaskStop, EnterWorktree, ExitWorktree.

Light on purpose: the entry point is imported to list tools. tree-sitter,
the classifier and the runner are imported only by the hooks that need them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pegboard import Tool, hookimpl

from ._config import ShellConfig

if TYPE_CHECKING:
    from pegboard import RuleSamples
    from collections.abc import Callable, Iterable

    from pegboard import Check, PermissionRequest, PluginContext, Rule, Session, Vote

__all__ = ["ShellConfig"]

PEGBOARD_API = "1.0"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("Bash", "Monitor", "TaskStop", "EnterWorktree", "ExitWorktree")

_P = "pegboard.plugins.shell"
_ALLOWED = frozenset({"TaskStop", "EnterWorktree", "ExitWorktree"})


@hookimpl
def pegboard_config_model() -> type[ShellConfig]:
    return ShellConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: Any) -> None:
    from ._confine import can_confine

    cfg = config if isinstance(config, ShellConfig) else ShellConfig()
    # With a working sandbox, any command can be confined to reading: Bash
    # belongs at the read level. Without one it can do anything the user can.
    level = "read" if can_confine(cfg.sandbox) else "unrestricted"
    register(Tool(name="Bash", handler=f"{_P}._bash:bash", input_model=f"{_P}._models:BashInput",
                  loading="always", permission=level))  # type: ignore[arg-type]
    register(Tool(name="Monitor", handler=f"{_P}._bash:monitor", input_model=f"{_P}._models:MonitorInput",
                  loading="deferred", permission=level,  # type: ignore[arg-type]
                  metadata={"requires": "Bash", "rule_names": ("Bash",)}))
    register(Tool(name="TaskStop", handler=f"{_P}._bash:task_stop", input_model=f"{_P}._models:TaskStopInput",
                  loading="deferred", permission="read", metadata={"requires": "Bash"}))
    register(Tool(name="EnterWorktree", handler=f"{_P}._worktree:enter_worktree",
                  input_model=f"{_P}._models:EnterWorktreeInput", loading="deferred", permission="workspace"))
    register(Tool(name="ExitWorktree", handler=f"{_P}._worktree:exit_worktree",
                  input_model=f"{_P}._models:ExitWorktreeInput", loading="deferred", permission="workspace"))


@hookimpl
def pegboard_permission(request: PermissionRequest, config: ShellConfig | None,
                        context: PluginContext) -> Vote | None:
    if request.tool.plugin != context.name:
        return None
    if request.tool.name in _ALLOWED:
        from pegboard import Vote

        return Vote.allow(f"{request.tool.name} is always allowed")
    return _voter()(request, config if isinstance(config, ShellConfig) else ShellConfig(), context.settings.layers)


@functools.cache
def _voter() -> Callable[[PermissionRequest, ShellConfig, Iterable[Any]], Vote]:
    # imported on the first vote, not with the plugin (the classifier and
    # tree-sitter are heavy); cached, since an import statement costs a
    # few thousand instructions of every Bash decision
    from ._permission import vote

    return vote


@hookimpl
def pegboard_rule_matcher(rule: Rule, saved: Any) -> Any:
    if rule.tool not in ("Bash", "Monitor") or rule.specifier is None:
        return None
    from ._permission import rule_matcher

    return rule_matcher(rule, saved)


@hookimpl
def pegboard_doctor(config: Any, context: PluginContext) -> Iterable[Check]:
    from ._doctor import checks

    return checks(config if isinstance(config, ShellConfig) else ShellConfig(), context.name)


@hookimpl
def pegboard_session_closed(session: Session) -> None:
    # Background jobs are session tasks: the core stops them (and our on_stop
    # kills their process groups) before this hook runs. Nothing else to free.
    return None


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    """For ``pegboard plugins check shell``: command rules, exact and by
    prefix, and commands that chain, pipe and redirect."""
    from pegboard import RuleSamples

    commands = ["git status", "git log --oneline", "npm run test -- -x", "ls -la", "rm -rf /",
                "git status && rm -rf x", "echo hi > out.txt", "cat a | grep b", "echo hi"]
    return RuleSamples(
        rules=["Bash(git status)", "Bash(git log:*)", "Bash(npm run test:*)", "Bash(ls *)", "Bash(rm -rf:*)",
               "Bash(echo:*)"],
        calls=[("Bash", {"command": command}) for command in commands],
    )

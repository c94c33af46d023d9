"""The shell plugin: Bash, Monitor, TaskStop, EnterWorktree, ExitWorktree.

Light on purpose: the entry point is imported to list tools. tree-sitter,
the classifier and the runner are imported only by the hooks that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pegboard import Tool, hookimpl

from ._config import ShellConfig

if TYPE_CHECKING:
    from pegboard import RuleSamples
    from collections.abc import Callable, Iterable

    from pegboard import Check, PermissionRequest, PluginContext, Rule, PluginSession, Vote

__all__ = ["ShellConfig"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("Bash", "Monitor", "TaskStop", "EnterWorktree", "ExitWorktree")

_P = "pegboard.plugins.shell"
# What `pegboard tools list` decides, mode by mode, to show what Bash may do
# (docs/plugins/shell.md's table "Bash in each mode" has the same three kinds).
_WHAT_BASH_MAY_DO = (
    ("read-only commands (ls)", {"command": "ls"}),
    ("file commands (mkdir new)", {"command": "mkdir new"}),
    ("other commands (rm -rf build)", {"command": "rm -rf build"}),
)


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
    # the classifier and tree-sitter are imported at the first Bash decision, not with the plugin
    bash_vote = f"{_P}._permission:bash_vote"
    register(Tool(name="Bash", handler=f"{_P}._bash:bash", input_model=f"{_P}._models:BashInput",
                  loading="always", permission=level, vote=bash_vote,  # type: ignore[arg-type]
                  permission_examples=_WHAT_BASH_MAY_DO))
    register(Tool(name="Monitor", handler=f"{_P}._bash:monitor", input_model=f"{_P}._models:MonitorInput",
                  loading="deferred", permission=level, vote=bash_vote,  # type: ignore[arg-type]
                  metadata={"requires": "Bash", "rule_names": ("Bash",)}))
    register(Tool(name="TaskStop", handler=f"{_P}._bash:task_stop", input_model=f"{_P}._models:TaskStopInput",
                  loading="deferred", permission="read", metadata={"requires": "Bash"}, vote=_always_allowed))
    register(Tool(name="EnterWorktree", handler=f"{_P}._worktree:enter_worktree",
                  input_model=f"{_P}._models:EnterWorktreeInput", loading="deferred", permission="workspace",
                  vote=_always_allowed))
    register(Tool(name="ExitWorktree", handler=f"{_P}._worktree:exit_worktree",
                  input_model=f"{_P}._models:ExitWorktreeInput", loading="deferred", permission="workspace",
                  vote=_always_allowed))


def _always_allowed(request: PermissionRequest) -> Vote:
    # TaskStop stops the session's own background work; the worktree tools move
    # the session between its own checkouts (deny rules still apply on top)
    from pegboard import Vote

    return Vote.allow(f"{request.tool.name} is always allowed")


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
def pegboard_session_closed(session: PluginSession) -> None:
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

"""The plan_mode plugin: the model asks to plan first, and the person approves the plan.

Tools: ``EnterPlanMode`` switches the session to plan mode (the person is
asked, firmly, in default and acceptEdits; it goes through in auto and in
plan mode itself); ``ExitPlanMode`` puts the plan to the person and, when
they approve it, switches to the mode they pick. Both are offered only to a
top-level session. While the session is in plan mode, every tool is decided
as the plan mode's policy says (only read-only tools are offered). The mode
changes through ``Session.set_mode``, which the host hears as the event
``mode.changed``. See docs/plugins/plan_mode.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pegboard import Tool, Vote, clamp_policy, hookimpl

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext

__all__ = ["PEGBOARD_API"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("EnterPlanMode", "ExitPlanMode")

_P = "pegboard.plugins.plan_mode"
# Modes in which switching to plan mode is a person's decision.
_ASKS_IN = frozenset({"default", "acceptEdits"})


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    # Both read-only: they change the session's mode, not the world, and
    # plan mode offers only read-only tools (ExitPlanMode must be offered there).
    register(Tool(vote=_tool_vote, name="EnterPlanMode", handler=f"{_P}._handlers:enter_plan_mode",
                  input_model=f"{_P}._models:EnterPlanModeInput", read_only=True, loading="deferred",
                  permission="read", subagents=False))
    register(Tool(vote=_tool_vote, name="ExitPlanMode", handler=f"{_P}._handlers:exit_plan_mode",
                  input_model=f"{_P}._models:ExitPlanModeInput", read_only=True, loading="deferred",
                  permission="read", subagents=False))


def _tool_vote(request: PermissionRequest) -> Vote | None:
    tool = request.tool
    if tool.name == "ExitPlanMode":
        return Vote.allow("ExitPlanMode asks the person itself before the mode changes")
    mode = request.policy.name
    if mode in _ASKS_IN:
        return Vote.ask("EnterPlanMode switches this session to plan mode: only read-only work until the "
                        "person approves a plan", firm=True)
    if mode in ("auto", "plan"):
        return Vote.allow(f"switching to plan mode from {mode} mode only narrows what runs")
    if clamp_policy("plan", mode).name == "plan":
        return Vote.allow(f"plan mode is narrower than {request.policy.kind} {mode}")
    return Vote.deny(f"plan mode would not be narrower than this session's {request.policy.kind} {mode}, "
                     "so EnterPlanMode cannot switch to it")

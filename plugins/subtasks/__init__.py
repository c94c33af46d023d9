"""The subtasks plugin: sub-agents under the parent's authority, on any model loop.

Tools: ``Agent`` (start a sub-agent), ``SendMessage`` (a follow-up),
``ListAgents``, ``DeleteAgent``; and, offered only to a sub-agent in auto
mode, ``SubagentHandback`` (its report handed in, ending its run). The model loop is the host's: pegboard asks
it to run one sub-agent through ``pegboard_run_subagent``, or runs the
reference runner named by ``[plugins.subtasks] runner``. See
docs/plugins/subtasks.md.

This module stays light: the handlers, YAML parsing, the store and httpx are
imported when first used.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pegboard import Absent, PermissionRequest, PluginContext, Rule, Tool, Vote, hookimpl

from . import _hookspecs
from ._config import SubtasksConfig

if TYPE_CHECKING:
    from pegboard import RuleSamples
    import click

    from pegboard import Check, PluginSession, StoreSchema

    from ._run import SubagentRun

__all__ = ["PEGBOARD_API", "SubagentRun", "SubtasksConfig", "hookspecs"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("Agent", "SendMessage", "ListAgents", "DeleteAgent", "SubagentHandback")

hookspecs = _hookspecs
"""This plugin's hook specifications (``pegboard_run_subagent``, ``pegboard_agent_dirs``)."""


def __getattr__(name: str) -> Any:
    if name == "SubagentRun":  # imported on first use: the entry point stays light
        from ._run import SubagentRun

        return SubagentRun
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_P = "pegboard.plugins.subtasks"
_H = f"{_P}._handlers"
_M = f"{_P}._models"
# Asked of auto mode's classifier (they start work that runs on its own).
_CLASSIFIED = frozenset({"Agent", "SendMessage", "SubagentHandback"})


def _a_subagent_in_auto(session: PluginSession) -> bool | Absent:
    return session.parent is not None and session.mode == "auto" or _NOT_A_CHILD_IN_AUTO


_NOT_A_CHILD_IN_AUTO = Absent("it is offered only to a sub-agent running in auto mode, which hands its report in")


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    add(_hookspecs)


@hookimpl
def pegboard_config_model() -> type[SubtasksConfig]:
    return SubtasksConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: SubtasksConfig, context: PluginContext) -> None:
    from ._sources import sources_for

    if config.max_depth == 0:
        return  # no sub-agents: nothing to start, nor to message, list or delete
    for source in sources_for(context.config_dir, context.root, True):
        context.watch(source.folder)  # Agent's description lists the types found there
        if source.kind == "project" and not context.project_trusted and source.folder.is_dir():
            count = sum(1 for p in source.folder.glob("*.md"))
            if count:
                context.report_ignored(source.folder, f"{count} project agent{'s' if count > 1 else ''}")
    register(Tool(vote=_tool_vote, name="Agent", handler=f"{_H}:agent", input_model=f"{_M}:AgentInput", loading="always",
                  permission="read"))
    # They act on the agents Agent started: they go wherever Agent goes.
    goes_with = {"requires": "Agent"}
    register(Tool(vote=_tool_vote, name="SendMessage", handler=f"{_H}:send_message", input_model=f"{_M}:SendMessageInput",
                  loading="deferred", permission="read", metadata=goes_with))
    register(Tool(vote=_tool_vote, name="ListAgents", handler=f"{_H}:list_agents", input_model=f"{_M}:ListAgentsInput",
                  read_only=True, loading="always", permission="read", metadata=goes_with))
    register(Tool(vote=_tool_vote, name="DeleteAgent", handler=f"{_H}:delete_agent", input_model=f"{_M}:DeleteAgentInput",
                  loading="deferred", permission="read", metadata=goes_with))
    # The child's side: its report handed in, ending its run. Only in auto
    # mode, where nobody watches the child's turns to see it is done.
    register(Tool(vote=_tool_vote, name="SubagentHandback", handler=f"{_H}:subagent_handback",
                  input_model=f"{_M}:SubagentHandbackInput", loading="always", permission="read",
                  offered_when=_a_subagent_in_auto))


@hookimpl
def pegboard_tool_description(tool: Tool, context: PluginContext) -> str | None:
    if tool.name != "Agent" or tool.plugin != context.name:
        return None
    from ._describe import describe_agent_tool

    return describe_agent_tool(context)


def _tool_vote(request: PermissionRequest) -> Vote | None:
    tool = request.tool
    # The child's own calls are each decided on their own, under its clamped
    # policy: starting or messaging an agent grants it nothing.
    if tool.name in _CLASSIFIED and request.policy.on_ask == "classifier":
        return Vote.ask(f"{tool.name} starts work that runs on its own")
    return Vote.allow(f"{tool.name} works on this session's own sub-agents, each call of which is decided anew")


class AgentType:
    """``Agent(Explore)``, ``Agent(code-*)``: a rule on the type an Agent call
    starts (general-purpose when the call names none)."""

    __slots__ = ("pattern",)

    def __init__(self, rule: Rule) -> None:
        pattern = (rule.specifier or "").strip()
        if not pattern:
            raise ValueError(f"{rule.text}: expected Agent(<agent type>)")
        self.pattern = pattern

    def matches(self, request: PermissionRequest) -> bool:
        value = request.input.get("subagent_type") or "general-purpose"
        return isinstance(value, str) and fnmatch.fnmatchcase(value, self.pattern)

    def describe(self) -> str:
        return f"Agent calls that start an agent of a type matching {self.pattern!r}"


@hookimpl
def pegboard_rule_matcher(rule: Rule, context: PluginContext) -> Any:
    if rule.tool != "Agent" or rule.specifier is None:
        return None
    return AgentType(rule)


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._records import store_schema

    return store_schema()


@hookimpl
def pegboard_event(session: PluginSession, kind: str, data: dict[str, Any]) -> None:
    if kind in ("permission.unanswered", "background.done"):
        from ._children import note_event

        note_event(session, kind, data)


@hookimpl
async def pegboard_session_closed(session: PluginSession) -> None:
    # The children's background runs were the parent's tasks, stopped before
    # this hook; their sessions end with the parent's.
    from ._children import family

    for live in list(family(session).live.values()):
        await live.session.aclose()


@hookimpl
def pegboard_register_commands(cli: click.Group) -> None:
    from ._cli import agent_group, agents_group

    cli.add_command(agents_group)
    cli.add_command(agent_group)


@hookimpl
def pegboard_doctor(config: SubtasksConfig, context: PluginContext) -> Iterable[Check]:
    from ._describe import doctor_checks

    return doctor_checks(context, config.max_depth)


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    """For ``pegboard plugins check subtasks``: ``Agent(type)`` rules."""
    from pegboard import RuleSamples

    task = {"description": "look around", "prompt": "Find the tests."}
    return RuleSamples(
        rules=["Agent(Explore)", "Agent(general-*)"],
        calls=[("Agent", {**task, "subagent_type": "Explore"}), ("Agent", {**task, "subagent_type": "general-purpose"}),
               ("Agent", task)],
    )

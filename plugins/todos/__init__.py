"""The todos plugin: the model's own task list for the session.

Tools, in the default style (``[plugins.todos] style = "tasks"``):
``TaskCreate``, ``TaskGet``, ``TaskUpdate``, ``TaskList``, Claude Code's task
tools; in the ``"todowrite"`` style, Claude Code's older ``TodoWrite`` (the
whole list rewritten at each call) instead. A durable session keeps its list
in the store (the table ``todos_lists``), so a resumed session has it; any
other session keeps it in memory. Each change reaches the host as the event
``todos.changed``. See docs/plugins/todos.md.

``[plugins.todos] style`` is every session's style unless the host picks one
for a session (per model, say) with ``use_style(session, style)``.

The todos plugin's ``TaskList`` takes the name from the core's older
background-task listing, which ``TaskOutput`` without a ``task_id`` replaces.

This module stays light: the handlers and SQLAlchemy are imported when a
tool runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, get_args

from pegboard import Absent, Tool, Vote, hookimpl

from ._config import Style, TodosConfig

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext, PluginSession, StoreSchema

__all__ = ["PEGBOARD_API", "TodosConfig", "session_style", "use_style"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("TaskCreate", "TaskGet", "TaskUpdate", "TaskList", "TodoWrite")

_P = "pegboard.plugins.todos"
_H = f"{_P}._handlers"
_M = f"{_P}._models"
_PLUGIN = "todos"
_STYLE_KEY = "style"


def use_style(session: PluginSession, style: Style) -> None:
    """Give ``session`` the ``"tasks"`` or the ``"todowrite"`` tools, whatever
    ``[plugins.todos] style`` says (a host that knows which its model was
    trained on). Not kept with a durable session: set it again on resuming.
    ``ValueError`` for another style."""
    if style not in get_args(Style):
        raise ValueError(f"todos style must be one of {', '.join(get_args(Style))}, not {style!r}")
    state = session.plugin_state(_PLUGIN)
    if state.get(_STYLE_KEY) != style:
        state[_STYLE_KEY] = style
        session.emit("catalogue.changed", {"reason": "todos style", "style": style})


def session_style(session: PluginSession, default: Style = "tasks") -> Style:
    """The style ``use_style`` gave ``session``, else ``default`` (the config's)."""
    chosen: Style = session.plugin_state(_PLUGIN).get(_STYLE_KEY, default)
    return chosen


def _offered_in(style: Style, default: Style) -> Callable[[PluginSession], bool | Absent]:
    def offered(session: PluginSession) -> bool | Absent:
        chosen = session_style(session, default)
        return chosen == style or Absent(f"this session has the {chosen!r} style of task tools: [plugins.todos] "
                                         "style, or the host's use_style, chooses")
    return offered


@hookimpl
def pegboard_config_model() -> type[TodosConfig]:
    return TodosConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: TodosConfig) -> None:
    # The list is the top-level conversation's plan; a sub-agent's work is
    # one item of it, reported back, not a list of its own. Both styles are
    # registered, so a host may pick either per session; each session is
    # offered one.
    todowrite, tasks = _offered_in("todowrite", config.style), _offered_in("tasks", config.style)
    register(Tool(vote=_tool_vote, name="TodoWrite", handler=f"{_H}:todo_write", input_model=f"{_M}:TodoWriteInput",
                  loading="always", permission="read", subagents=False, offered_when=todowrite))
    register(Tool(vote=_tool_vote, name="TaskCreate", handler=f"{_H}:task_create", input_model=f"{_M}:TaskCreateInput",
                  loading="deferred", permission="read", subagents=False, offered_when=tasks))
    register(Tool(vote=_tool_vote, name="TaskGet", handler=f"{_H}:task_get", input_model=f"{_M}:TaskGetInput",
                  loading="deferred", read_only=True, permission="read", subagents=False, offered_when=tasks))
    register(Tool(vote=_tool_vote, name="TaskUpdate", handler=f"{_H}:task_update", input_model=f"{_M}:TaskUpdateInput",
                  loading="deferred", permission="read", subagents=False, offered_when=tasks))
    register(Tool(vote=_tool_vote, name="TaskList", handler=f"{_H}:task_list", input_model=f"{_M}:TaskListInput",
                  loading="deferred", read_only=True, permission="read", subagents=False, offered_when=tasks))


def _tool_vote(request: PermissionRequest) -> Vote | None:
    return Vote.allow(f"{request.tool.name} only keeps the session's own task list")


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._lists import store_schema

    return store_schema()

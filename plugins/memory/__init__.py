"""The memory plugin: what the agent keeps across sessions, in pegboard's store.

Tool: ``memory``, with the commands of Anthropic's memory tool (``view``,
``create``, ``str_replace``, ``insert``, ``delete``, ``rename``) on paths
under ``/memories``. Any model gets it as a function tool; a host on
Anthropic's API may send it as that API's own memory tool type instead
(``catalogue.to_anthropic(native={"memory"})``), for models trained on it.
The memories are rows of the store (``memory_files``), one set per person
(``[plugins.memory] person``, or ``use_person`` per session), and per
project with ``scope = "project"``; never files in the working tree.

Reading and writing memories needs only the read level: the store is
pegboard's own. A sub-agent gets no memory unless whoever starts it grants
read (``Session.child(access={"memory": "read"})``, the Agent tool's
``tool_access``), and may never write. See docs/plugins/memory.md.

This module stays light: the handler and SQLAlchemy are imported when the
tool runs or a command needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pegboard import Tool, Vote, hookimpl

from ._config import MemoryConfig, check_person

if TYPE_CHECKING:
    import click

    from pegboard import PermissionRequest, PluginContext, PluginSession, StoreSchema

__all__ = ["PEGBOARD_API", "MemoryConfig", "session_person", "use_person"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("memory",)

_P = "pegboard.plugins.memory"
_PLUGIN = "memory"
_PERSON = "person"
# Anthropic's own memory tool type: its model calls it "memory", with the same commands.
ANTHROPIC_MEMORY_TOOL = {"type": "memory_20250818", "name": "memory"}


def use_person(session: PluginSession, person: str) -> None:
    """Keep ``session``'s memories (and those of the sub-agents made from
    it) as ``person``'s, whatever ``[plugins.memory] person`` says: for a
    host that serves several people from one toolbox. Not kept with a
    durable session: call it again on resuming. ``ValueError`` for a name
    that is empty, longer than 128 characters or not printable."""
    session.plugin_state(_PLUGIN)[_PERSON] = check_person(person)


def session_person(session: PluginSession) -> str | None:
    """The person ``use_person`` gave ``session`` or the session it was made from; None when none did."""
    current: PluginSession | None = session
    while current is not None:
        found = current.plugin_state(_PLUGIN).get(_PERSON)
        if found is not None:
            return str(found)
        current = current.parent
    return None


@hookimpl
def pegboard_config_model() -> type[MemoryConfig]:
    return MemoryConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    # permission "read": the memories are pegboard's own, not the working tree.
    # subagents "read": a sub-agent gets them only when granted, and only to read.
    register(Tool(name="memory", handler=f"{_P}._handler:memory", input_model=f"{_P}._models:MemoryInput",
                  loading="always", permission="read", subagents="read",
                  native={"anthropic": ANTHROPIC_MEMORY_TOOL}, vote=_vote))


def _vote(request: PermissionRequest) -> Vote:
    command = request.input.get("command")
    if command != "view" and request.access != "full":
        return Vote.deny(f"this agent may read memories but not change them ({command} asked): record what is "
                         "worth keeping in your report, for the agent that started you to keep")
    from ._confine import PathRefused, memory_key

    paths = [request.input.get(k) for k in ("old_path", "new_path")] if command == "rename" else \
        [request.input.get("path")]
    try:
        for path in paths:
            if path is not None:  # a missing one is the handler's to name
                memory_key(path)
    except PathRefused as exc:
        return Vote.deny(str(exc))
    shown = " to ".join(str(p) for p in paths if p is not None)
    return Vote.allow(f"memory {command} {shown}: the person's own memories, kept in pegboard's store")


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._files import store_schema

    return store_schema()


@hookimpl
def pegboard_register_commands(cli: click.Group, context: PluginContext) -> None:
    from ._cli import memory_group

    cli.add_command(memory_group(context.name))

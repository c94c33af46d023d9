"""The conversation plugin: the model searches and re-reads its own conversation,
and checks and compacts its live window.

Tools: ``ConversationSearch`` and ``ConversationRead`` over the session's
conversation log (the turns compaction took out of the window included),
``ContextCheck`` and ``ContextCompact`` over the live window. pegboard does
not own the conversation, so the host provides it:

- it records each message with ``ConversationLog(toolbox).record(session,
  *messages)`` (or ``await ... arecord(...)``): a durable session keeps them in
  the store (the table ``conversation_messages``), so the session resumed in
  another process finds them; any other session keeps them in memory; or
- it answers ``pegboard_conversation_messages(session)`` with its own list.

``ContextCheck`` needs the host's ``pegboard_context_usage`` (its token
counts), ``ContextCompact`` its ``pegboard_context_compact`` (its compaction).
Each tool is offered only where the host provides what it needs. See
docs/plugins/conversation.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard import Absent, Tool, hookimpl

from . import _hookspecs

if TYPE_CHECKING:
    from pegboard import PluginContext, PluginSession, StoreSchema, Toolbox

    from ._models import ContextUsage

__all__ = ["PEGBOARD_API", "ContextUsage", "ConversationLog", "hookspecs", "log_available"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("ConversationSearch", "ConversationRead", "ContextCheck", "ContextCompact")

hookspecs = _hookspecs
"""This plugin's hook specifications (``pegboard_conversation_messages``,
``pegboard_context_usage``, ``pegboard_context_compact``)."""

_P = "pegboard.plugins.conversation"
_H = f"{_P}._handlers"
_M = f"{_P}._models"
LOG_HOOK = "pegboard_conversation_messages"
USAGE_HOOK = "pegboard_context_usage"
COMPACT_HOOK = "pegboard_context_compact"


def __getattr__(name: str) -> Any:
    if name == "ContextUsage":  # a pydantic model, imported on first use
        from ._models import ContextUsage

        return ContextUsage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def log_available(context: PluginContext, session: PluginSession) -> bool:
    """Whether ``session`` has a conversation log to search: the host answers
    ``pegboard_conversation_messages``, or messages were recorded for it
    (in this process, or in the store by an earlier one for a durable session)."""
    if context.host_implements(LOG_HOOK):
        return True
    from ._log import has_log

    return has_log(context, session)


class ConversationLog:
    """The host's side of the log in one toolbox: ``ConversationLog(toolbox)``
    once, then ``record(session, *messages)`` (``await arecord(...)`` in async
    code) for each message of a session made from that toolbox.

    Messages are recorded as the host sends them to the model or receives
    them: an Anthropic Messages API message, an OpenAI Chat Completions
    message, an OpenAI Responses input item, or an SDK's pydantic object of
    one. A durable session keeps them in the store, written before ``record``
    returns; any other session in memory. ``enabled`` is False, and nothing is
    recorded, when the conversation plugin is not loaded in the toolbox
    (``[plugins.conversation] enabled = false``)."""

    def __init__(self, toolbox: Toolbox) -> None:
        me = sys.modules[__name__]
        found = [name for name, plugin in toolbox.records.items()
                 if plugin.obj is me and plugin.enabled and plugin.error is None]
        self._context = toolbox.context_for(found[0]) if found else None

    @property
    def enabled(self) -> bool:
        """Whether the conversation plugin is loaded, so that ``record`` keeps messages."""
        return self._context is not None

    def record(self, session: PluginSession, *messages: Any) -> list[int]:
        """Record ``messages`` (oldest first) as the next messages of
        ``session``'s conversation; their indices (``#N`` in ConversationSearch,
        from 1), ``[]`` when the plugin is not loaded. The first message
        recorded offers ConversationSearch and ConversationRead to the session
        (the host hears ``catalogue.changed``). ``ValueError`` names a message
        that is none of the shapes above."""
        if self._context is None:
            return []
        from ._log import append

        return append(self._context, session, messages)

    async def arecord(self, session: PluginSession, *messages: Any) -> list[int]:
        """``record`` for async code: a durable session's store is written on a worker thread."""
        import asyncio

        return await asyncio.to_thread(self.record, session, *messages)


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    add(_hookspecs)


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._log import store_schema

    return store_schema()


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    # All four read level and read-only: they read the session's own
    # conversation, which the model has seen, and ContextCompact only asks the
    # host to summarise that conversation (no file, command or network is
    # touched), which plan mode's long reading sessions need most.
    def has_log(session: PluginSession) -> bool | Absent:
        return log_available(context, session) or _NO_LOG

    def host_does(hook: str, otherwise: Absent) -> Callable[[PluginSession], bool | Absent]:
        return lambda session: context.host_implements(hook) or otherwise

    register(Tool(name="ConversationSearch", handler=f"{_H}:conversation_search",
                  input_model=f"{_M}:ConversationSearchInput", read_only=True, loading="deferred",
                  permission="read", timeout_s=60, offered_when=has_log))
    register(Tool(name="ConversationRead", handler=f"{_H}:conversation_read",
                  input_model=f"{_M}:ConversationReadInput", read_only=True, loading="deferred",
                  permission="read", timeout_s=60, lifts_caps_with_scratchpad=True, offered_when=has_log))
    register(Tool(name="ContextCheck", handler=f"{_H}:context_check", input_model=f"{_M}:ContextCheckInput",
                  read_only=True, loading="deferred", permission="read", offered_when=host_does(USAGE_HOOK, _NO_USAGE)))
    register(Tool(name="ContextCompact", handler=f"{_H}:context_compact", input_model=f"{_M}:ContextCompactInput",
                  read_only=True, loading="deferred", permission="read",
                  offered_when=host_does(COMPACT_HOOK, _NO_COMPACT)))


_NO_LOG = Absent("the host keeps no conversation log for this session (a host records its messages with "
                 "pegboard.plugins.conversation.ConversationLog, or implements pegboard_conversation_messages)")
_NO_USAGE = Absent("the host reports no token counts (a host implements pegboard_context_usage)")
_NO_COMPACT = Absent("the host does not compact the conversation on request (a host implements "
                     "pegboard_context_compact)")

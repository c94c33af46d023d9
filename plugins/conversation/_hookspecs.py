"""The hooks the conversation plugin declares (``pegboard_add_hooks``): how a
host that keeps the conversation itself answers for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pegboard import hookspec

if TYPE_CHECKING:
    from pegboard import Session

    from ._models import ContextUsage


@hookspec(firstresult=True)
def pegboard_conversation_messages(session: Session) -> Sequence[Any] | None:
    """Host callback: the whole conversation of ``session`` so far, oldest
    first, including the turns compaction took out of the model's window. May
    be a coroutine.

    Each message as the host keeps it: an Anthropic Messages API message
    (``role``, ``content`` as a string or blocks), an OpenAI Chat Completions
    message (``tool_calls``, ``role: "tool"`` included), an OpenAI Responses
    input item (``function_call``, ``function_call_output``, ...), or an SDK's
    pydantic object of one of these (``model_dump`` is called). Message ``#N``
    is the N-th of the list. Return None to pass: the messages recorded with
    ``pegboard.plugins.conversation.ConversationLog`` are used instead. Implementing it
    offers ConversationSearch and ConversationRead to every session."""


@hookspec(firstresult=True)
def pegboard_context_usage(session: Session) -> ContextUsage | Mapping[str, Any] | None:
    """Host callback: the state of the model's live window for ``session``, as
    a ``ContextUsage`` or a dict of its fields: ``used_tokens`` and
    ``window_tokens`` (required), ``compact_at_tokens``, ``kept_recent_tokens``,
    ``overhead_tokens`` and ``compactions``. May be a coroutine. Implementing
    it offers ContextCheck. Return None when the host has no figures for this
    session (the model is told so)."""


@hookspec(firstresult=True)
def pegboard_context_compact(session: Session, instructions: str | None, keep_recent: bool) -> str | bool | None:
    """Host callback: the model asks to compact its live window before its
    next step. ``instructions``: what the summary should keep or drop (None:
    the host's own default); ``keep_recent``: keep the most recent turns
    verbatim (False: start afresh from the summary alone). Compact once the
    current batch of tool calls is answered, not in the middle of it. May be a
    coroutine. Return True (or a sentence for the model) once the compaction
    is arranged, False when the host will not compact now. Implementing it
    offers ContextCompact."""

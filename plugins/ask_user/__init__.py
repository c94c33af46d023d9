"""The ask_user plugin: the model asks the person multiple-choice questions.

Tool: ``AskUserQuestion`` (1 to 4 questions of 2 to 4 options each, an
"Other" choice always added). The person answers through the host: its
``pegboard_ask_user`` hook (declared here), else a form through the core's
``pegboard_elicit`` (``pegboard call`` at a terminal asks there; ``pegboard
serve`` sends an MCP elicitation form). The tool is offered only where one of
the two has an implementation: nobody would answer anywhere else. See
docs/plugins/ask_user.md.

A host that answers later returns ``Answer.later()`` from
``pegboard_ask_user``: the question becomes a pending call, answered with
``answer_question`` (``_later``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard import Absent, Tool, Vote, hookimpl

from . import _hookspecs

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext, PluginSession, Session, StoreSchema, Toolbox

__all__ = ["PEGBOARD_API", "answer_question", "hookspecs", "someone_answers"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("AskUserQuestion",)

hookspecs = _hookspecs
"""This plugin's hook specification (``pegboard_ask_user``)."""

_P = "pegboard.plugins.ask_user"


def someone_answers(context: PluginContext, session: PluginSession) -> bool:
    """Whether a host can put questions to the person for ``session``: it
    implements ``pegboard_ask_user`` or ``pegboard_elicit``, and has not said
    this session cannot (``session.can_ask = False``, set by a host that
    knows, such as ``pegboard serve`` for a client that cannot take a form)."""
    if session.can_ask is False:
        return False
    return context.host_implements("pegboard_ask_user") or context.host_implements("pegboard_elicit")


def answer_question(where: Toolbox | Session, pending_id: str, answers: dict[str, str],
                    annotations: dict[str, Any] | None = None) -> None:
    """Answer an AskUserQuestion waiting as a pending call (a host's
    ``pegboard_ask_user`` returned ``Answer.later()``); see ``_later.answer_question``."""
    from ._later import answer_question as record

    record(where, pending_id, answers, annotations)


@hookimpl
def pegboard_store_schema() -> StoreSchema:
    from ._later import store_schema

    return store_schema()


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    add(_hookspecs)


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], context: PluginContext) -> None:
    # Read-only: asking changes nothing, and plan mode (read-only tools only)
    # is where clarifying questions matter most.
    register(Tool(vote=_tool_vote, name="AskUserQuestion", handler=f"{_P}._handlers:ask_user_question",
                  input_model=f"{_P}._models:AskUserQuestionInput", read_only=True, loading="always",
                  permission="read", offered_when=lambda session: someone_answers(context, session) or _NOBODY))


_NOBODY = Absent("no host puts questions to a person here: a host implements pegboard_ask_user or "
                 "pegboard_elicit, and `pegboard call` asks at a terminal")


def _tool_vote(request: PermissionRequest) -> Vote | None:
    return Vote.allow("AskUserQuestion asks the person, who answers or declines")

"""The hook the ask_user plugin declares (``pegboard_add_hooks``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pegboard import hookspec

if TYPE_CHECKING:
    from pegboard import Answer, PluginSession


@hookspec(firstresult=True)
def pegboard_ask_user(session: PluginSession, questions: list[dict[str, Any]]) -> dict[str, Any] | Answer | None:
    """Host callback: put AskUserQuestion's questions to the person and
    return their answers. May be a coroutine.

    ``questions`` are as the model gave them: each a dict with ``question``,
    ``header`` (at most 12 characters), ``options`` (2 to 4, each ``label``,
    ``description`` and maybe ``preview``) and ``multiSelect``. Offer an
    "Other" choice with free text besides the options. Return
    ``{"answers": {question: answer}, "annotations": {question: {...}}}``:
    each answer a string (the chosen label, several joined with ", " for a
    multi-select question, or the person's own text), ``annotations``
    optional (notes the front end kept per question). Return ``{"declined":
    True}`` when the person would not answer, None to pass (the next
    implementation, else the form through ``pegboard_elicit``), or
    ``Answer.later()`` when the person will answer later: the question then
    waits as a pending call of the session (the model is told so, and nothing
    waits in the session), answered with
    ``pegboard.plugins.ask_user.answer_question`` and run with
    ``session.pending.resolve(id)`` (docs/plugins/ask_user.md)."""

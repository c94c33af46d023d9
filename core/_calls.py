"""One call as the pre- and post-call hooks see it, and what a pre-call hook
answers: values, imported by the pipeline and by hooks alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._session import Session
    from ._tools import Tool

__all__ = ["CallInfo", "PreCall", "RESULTS_FOLDER"]

RESULTS_FOLDER = "results"  # in the session's data_dir: tool output too long to return whole


@dataclass
class CallInfo:
    """One call as the pre- and post-call hooks see it, after the permission decision."""

    session: Session
    """The session the call runs in."""
    tool: Tool
    """The tool called."""
    input: dict[str, Any]
    """The validated arguments as a dict (after any earlier hook's rewrite)."""
    call_id: str
    """The call's id, as its handler sees it in ``ctx.call_id``."""


@dataclass(frozen=True)
class PreCall:
    """A pre-call hook's verdict: rewrite the input, block, or add context.

    Give one field. A block wins over everything; several hooks' context
    texts are all kept.
    """

    input: dict[str, Any] | None = None
    """New arguments: validated against the tool's input model and decided again, so that a
    hook cannot take a call past the permission rules."""
    block: str | None = None
    """Stop the call: this text is the error result the model gets."""
    context: str | None = None
    """Text added to the call's result for the model (a note, a reminder)."""

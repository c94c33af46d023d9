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
    """One call as the pre- and post-call hooks see it."""

    session: Session
    tool: Tool
    input: dict[str, Any]
    call_id: str


@dataclass(frozen=True)
class PreCall:
    """A pre-call hook's verdict: rewrite the input, block, or add context."""

    input: dict[str, Any] | None = None
    block: str | None = None
    context: str | None = None

"""One call as the pre- and post-call hooks see it, what a pre-call hook
answers, and a call kept for a person's answer: values, imported by the
pipeline and by hooks alike."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .decisions import Answer
    from .plugin_session import PluginSession
    from .tools import Tool

__all__ = ["CallInfo", "PendingCall", "PreCall", "RESULTS_FOLDER", "approval_digest"]

RESULTS_FOLDER = "results"  # in the session's data_dir: tool output too long to return whole


@dataclass
class CallInfo:
    """One call as the pre- and post-call hooks see it, after the permission decision."""

    session: PluginSession
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


@dataclass(frozen=True)
class PendingCall:
    """One call kept for a person's answer (``session.pending``). ``status``:
    "pending" (no answer yet), "approved" or "denied" (answered, not run
    yet), "done"."""

    id: str
    session_id: str
    call_id: str
    tool: str
    input: dict[str, Any]
    reason: str
    source: str
    suggestions: tuple[str, ...]
    status: str = "pending"
    answer: Answer | None = None
    created_at: float = field(default_factory=time.time)
    digest: str | None = None
    """``approval_digest`` of the tool and input the answer was given for (None: no answer yet)."""
    requester: str | None = None
    """Who the call was made for (``Session.requester``: a client, or the local user)."""
    resolved_at: float | None = None
    """When it was answered, then when it was settled (None: no answer yet)."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "session_id": self.session_id, "call_id": self.call_id, "tool": self.tool,
                "input": self.input, "reason": self.reason, "source": self.source,
                "suggestions": list(self.suggestions), "status": self.status,
                "answer": answer_json(self.answer), "created_at": self.created_at, "digest": self.digest,
                "requester": self.requester, "resolved_at": self.resolved_at}

    def current_digest(self) -> str:
        """``approval_digest`` of the call's tool and input as they are now."""
        return approval_digest(self.tool, self.input)

    def message(self) -> str:
        """What the model is told instead of the result."""
        return (f"{self.tool} was not run yet: it needs a person's approval ({self.reason}). It waits as pending "
                f"call {self.id}; you will be given its result when they decide. Carry on with work that does "
                "not depend on it.")


def approval_digest(tool: str, input: Any) -> str:
    """sha256 of the canonical JSON of a call's tool and input: what an answer
    is bound to."""
    raw = json.dumps({"tool": tool, "input": input}, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                     default=str)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def answer_json(answer: Answer | None) -> dict[str, Any] | None:
    """A person's answer as kept with a pending call."""
    if answer is None:
        return None
    return {"allow": answer.allow, "remember": answer.remember, "rule": answer.rule, "message": answer.message,
            "approver": answer.approver}

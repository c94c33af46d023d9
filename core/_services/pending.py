"""Calls waiting for a person's approval.

A host whose ``pegboard_ask`` answers ``Answer.later()`` (a web UI, a chat
channel), or an adapter whose framework asks in its own time, turns an ask
into a pending call: the model is told the call waits, and the host resolves
it later (approve, approve and remember, deny with a message). For a durable
session (``Toolbox.session(session_id=...)``) pending calls are kept in the
store: any process can list and answer them (``pegboard approvals``), and the
session resumed after a restart runs them. Otherwise they live in memory,
for this process.

An answer is bound to what was answered: it is kept with the digest of the
call's tool and input (``approval_digest``), and a call whose tool or input
no longer has that digest when it is resolved is refused, not run. Each call
is answered once and run once (the store's row changes only from the state
it was read in, so two processes racing do not both win).
"""

from __future__ import annotations

import getpass
import json
import os
import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._api.calls import PendingCall, answer_json
from .._api.decisions import Answer, Decision
from .store import CORE_COMPONENT
from .tables import pending
from .._api.tools import ToolResult

if TYPE_CHECKING:
    from .._engine.session import Session
    from .._engine.toolbox import Toolbox

__all__ = ["AlreadyAnswered", "ChangedSinceShown", "PendingQueue", "answer_pending", "list_pending", "local_user",
           "recently_answered"]


def local_user() -> str:
    """The name of the user running this process: who answers at a terminal
    (or on the page ``pegboard approvals serve`` shows), and who a local
    session's calls are made for."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's user without a passwd entry)
        return f"uid {os.getuid()}"


class AlreadyAnswered(ValueError):
    """The pending call was answered (or run) already: each is answered once."""


class ChangedSinceShown(ValueError):
    """The pending call's tool or input is no longer what the person was shown."""


def _answer_from(data: str | None) -> tuple[Answer | None, str | None]:
    if not data:
        return None, None
    raw = json.loads(data)
    return (Answer(allow=bool(raw["allow"]), remember=raw.get("remember"), rule=raw.get("rule"),
                   message=raw.get("message"), approver=raw.get("approver")), raw.get("digest"))


def _same_answer(one: Answer, other: Answer) -> bool:
    """The same decision (who gave it aside: a host settling a call repeats the answer, not the approver)."""
    return replace(one, approver=None) == replace(other, approver=None)


def _row_to_call(row: Any) -> PendingCall:
    answer, digest = _answer_from(row.answer)
    return PendingCall(id=row.id, session_id=row.session_id, call_id=row.call_id, tool=row.tool,
                       input=json.loads(row.input), reason=row.reason, source=row.source,
                       suggestions=tuple(json.loads(row.suggestions)), status=row.status,
                       answer=answer, created_at=row.created_at, digest=digest, requester=row.requester,
                       resolved_at=row.resolved_at)


class PendingQueue:
    """A session's pending calls (``session.pending``, the contract's
    ``PendingCalls``): in memory, or in the store for a durable session."""

    def __init__(self, session: Session):
        self._session = session
        self._memory: dict[str, PendingCall] = {}
        self._held: dict[str, str] = {}  # id -> digest of what this process held (and its host was shown)

    def hold(self, tool: str, input: dict[str, Any], call_id: str, decision: Decision) -> PendingCall:
        """Keep a call for a person's answer; the host hears ``approval.pending``."""
        session = self._session
        call = PendingCall(id=f"p-{uuid.uuid4().hex[:12]}", session_id=session.id, call_id=call_id, tool=tool,
                           input=dict(input), reason=decision.reason, source=decision.source,
                           suggestions=tuple(decision.suggestions), requester=_requester(session))
        if session.durable:
            with _store(session.toolbox).begin() as conn:
                conn.execute(pending.insert().values(
                    id=call.id, session_id=call.session_id, call_id=call.call_id, tool=call.tool,
                    input=json.dumps(call.input, default=str), reason=call.reason, source=call.source,
                    suggestions=json.dumps(list(call.suggestions)), status=call.status, answer=None,
                    created_at=call.created_at, resolved_at=None, requester=call.requester))
        else:
            self._memory[call.id] = call
        self._held[call.id] = call.current_digest()
        session.emit("approval.pending", call.to_json())
        return call

    def list(self) -> list[PendingCall]:
        """This session's calls not run yet (answered or not), oldest first."""
        if self._session.durable:
            return list_pending(self._session.toolbox, self._session.id)
        return [c for c in self._memory.values() if c.status != "done"]

    def get(self, pending_id: str) -> PendingCall | None:
        return next((c for c in self.list() if c.id == pending_id), None)

    async def resolve(self, pending_id: str, answer: Answer | None = None) -> ToolResult:
        """Answer a pending call (or take the answer given elsewhere, with
        ``answer`` None) and settle it: approved, it runs now with that
        approval (a deny rule still wins); denied, the result says so. The
        result is the call's, for the host to give the model; the host hears
        ``approval.resolved``."""

        call = self.get(pending_id)
        if call is None:
            return ToolResult.error(f"No pending call {pending_id!r} in this session.")
        if answer is not None and answer.pending:
            return ToolResult.error(f"Answer.later() does not answer pending call {pending_id}: it still waits; "
                                    "resolve it with an approval or a denial.")
        if answer is not None and call.answer is not None and not _same_answer(answer, call.answer):
            return ToolResult.error(f"Pending call {pending_id} was answered already "
                                    f"({'approved' if call.answer.allow else 'denied'}); each call is answered "
                                    "once: resolve it without an answer to settle it as answered.")
        # What the answer is bound to: the digest kept with it, and what this process held (and
        # showed its host) when the call was made, if it is the same process.
        bound = [d for d in (call.digest if call.answer is not None else None, self._held.get(call.id)) if d]
        answer = call.answer or answer  # the recorded one (with its approver) when both are given: they agree
        if answer is None or answer.pending:
            return ToolResult.error(f"Pending call {pending_id} has no answer yet.")
        now = call.current_digest()
        changed = answer.allow and any(d != now for d in bound)
        if changed:  # settled as refused, so that no later resolve runs it either
            answer = Answer(allow=False, message="its tool or input changed after it was approved")
        if not self._finish(call, answer):
            return ToolResult.error(f"Pending call {pending_id} was settled already (by another host); it is not "
                                    "run twice.")
        if changed:
            result = ToolResult.error(
                f"{call.tool} was not run: pending call {call.id}'s tool or input changed after it was "
                f"{'approved' if call.answer is not None else 'held for approval'} (approved digest "
                f"{next(d for d in bound if d != now)[:12]}…, now {now[:12]}…). An approval holds only for the call that was approved; "
                "make the call again to be asked about it.")
        elif answer.allow:
            result = await self._session.call(call.tool, call.input, call_id=call.call_id, approval=answer)
        else:
            result = ToolResult.error(f"{call.tool} was not run: {answer.message or 'the person declined this call'}.")
        self._session.emit("approval.resolved", {"id": call.id, "tool": call.tool, "call_id": call.call_id,
                                                 "allowed": answer.allow, "is_error": result.is_error})
        return result

    def _finish(self, call: PendingCall, answer: Answer) -> bool:
        """Mark the call done; False when it was done already."""
        self._held.pop(call.id, None)
        if self._session.durable:
            return _record(self._session.toolbox, call.id, answer, "done", was=call.status, digest=call.digest)
        if self._memory[call.id].status == "done":
            return False
        self._memory[call.id] = replace(call, status="done", answer=answer)
        return True


def _requester(session: Session) -> str:
    """The session's requester, or the one of the session it was made from, or the local user."""
    found: Session | None = session
    while found is not None:
        if found.requester:
            return found.requester[:200]
        found = found.parent
    return local_user()


def _store(toolbox: Toolbox) -> Any:
    return toolbox.plugins.stores(CORE_COMPONENT)


def list_pending(toolbox: Toolbox, session_id: str | None = None, *, requester: str | None = None,
                 limit: int = 1000) -> list[PendingCall]:
    """Pending calls of durable sessions in the store (one session's, or all;
    one requester's, or everyone's), not run yet, oldest first."""
    from sqlalchemy import select

    query = select(pending).where(pending.c.status != "done").order_by(pending.c.created_at).limit(limit)
    if session_id is not None:
        query = query.where(pending.c.session_id == session_id)
    if requester is not None:
        query = query.where(pending.c.requester == requester)
    with _store(toolbox).begin(read_only=True) as conn:
        return [_row_to_call(row) for row in conn.execute(query)]


def recently_answered(toolbox: Toolbox, *, requester: str | None = None, limit: int = 20) -> list[PendingCall]:
    """Durable sessions' pending calls that were answered (run or not yet),
    the most recently answered or settled first."""
    from sqlalchemy import select

    query = (select(pending).where(pending.c.resolved_at.is_not(None))
             .order_by(pending.c.resolved_at.desc()).limit(limit))
    if requester is not None:
        query = query.where(pending.c.requester == requester)
    with _store(toolbox).begin(read_only=True) as conn:
        return [_row_to_call(row) for row in conn.execute(query)]


def answer_pending(toolbox: Toolbox, pending_id: str, answer: Answer, *,
                   shown_digest: str | None = None) -> PendingCall:
    """Record a person's answer to a durable session's pending call, from any
    process; the session's host runs it (``session.pending.resolve(id)``).
    ``KeyError`` when there is no such call waiting. ``shown_digest``: the
    ``approval_digest`` of the call as the person was shown it; a call whose
    tool or input no longer has it is refused (``ValueError``), not answered."""
    if answer.pending:
        raise ValueError("Answer.later() is no answer: approve or deny the call")
    found = next((c for c in list_pending(toolbox) if c.id == pending_id), None)
    if found is None:
        raise KeyError(pending_id)
    status = "approved" if answer.allow else "denied"
    digest = found.current_digest()
    if shown_digest is not None and shown_digest != digest:
        raise ChangedSinceShown(f"pending call {pending_id}'s tool or input changed since it was shown (shown "
                         f"{shown_digest[:12]}…, now {digest[:12]}…); nothing was answered: look at it again")
    if found.status != "pending" or not _record(toolbox, pending_id, answer, status, was="pending", digest=digest):
        raise AlreadyAnswered(f"pending call {pending_id} was answered already ({found.status}); each pending call "
                              "is answered once")
    return replace(found, status=status, answer=answer, digest=digest, resolved_at=time.time())


def _record(toolbox: Toolbox, pending_id: str, answer: Answer, status: str, *, was: str,
            digest: str | None) -> bool:
    """Change the row from status ``was`` only; False when it had changed meanwhile."""
    from sqlalchemy import update

    with _store(toolbox).begin() as conn:
        changed = conn.execute(update(pending).where(pending.c.id == pending_id, pending.c.status == was).values(
            status=status, answer=json.dumps({**(answer_json(answer) or {}), "digest": digest}),
            resolved_at=time.time()))
        return bool(changed.rowcount)

"""Questions answered later: AskUserQuestion as a pending call.

A host whose ``pegboard_ask_user`` returns ``Answer.later()`` (a web UI, a
chat channel that answers tomorrow) gets the question parked as one of the
session's pending calls (``session.pending``; in the store for a durable
session, so any process can answer it): the model is told the question waits,
and nothing waits in the session. ``answer_question`` records the person's
answers and approves the pending call; when the session's host resolves it
(``session.pending.resolve(id)``), AskUserQuestion runs again, finds the
answers recorded for that call, and its result carries them to the model.

Answers are kept by (session id, call id) with the questions they answer, and
taken once: in the table ``ask_user_answers`` for a durable session, in the
plugin's session state otherwise.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pegboard import Answer, Session

if TYPE_CHECKING:
    from pegboard import StoreSchema, Toolbox, ToolContext

__all__ = ["PLUGIN", "TABLE", "answer_question", "store_schema", "take_answers"]

PLUGIN = "ask_user"
TABLE = "ask_user_answers"
TOOL = "AskUserQuestion"


def store_schema() -> StoreSchema:
    from sqlalchemy import Column, MetaData, String, Table, Text

    from pegboard import StoreSchema

    metadata = MetaData()
    Table(TABLE, metadata,
          Column("session_id", String(64), primary_key=True),
          Column("call_id", String(128), primary_key=True),
          # {"questions": [...], "answers": {...}, "annotations": {...}}
          Column("data", Text, nullable=False))
    return StoreSchema(metadata=metadata, version=1)


def _table() -> Any:
    from sqlalchemy import column, table

    return table(TABLE, column("session_id"), column("call_id"), column("data"))


def _questions_of(call_input: dict[str, Any]) -> str:
    return json.dumps(call_input.get("questions"), sort_keys=True, default=str)


def answer_question(where: Toolbox | Session, pending_id: str, answers: dict[str, str],
                    annotations: dict[str, Any] | None = None) -> None:
    """Answer an AskUserQuestion that waits as pending call ``pending_id``:
    ``answers`` by question text (a label, several joined with ", ", or the
    person's own text), ``annotations`` optional, as ``pegboard_ask_user``
    returns them. ``where``: the toolbox (a durable session's question, from
    any process: the call is then approved in the store, and its session's host
    runs it with ``session.pending.resolve(id)``), or the session itself (its
    host then resolves it with ``Answer(allow=True)``; a session without an id
    keeps its pending calls only in memory). To decline, deny the pending call
    as any other. ``KeyError``: no such question waits; ``ValueError``: the
    pending call is not an AskUserQuestion, or was answered already."""
    if not isinstance(answers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in answers.items()):
        raise ValueError("answers must map each question's text to the answer as a string")
    if isinstance(where, Session) and not where.durable:
        call = where.pending.get(pending_id)
        if call is None:
            raise KeyError(pending_id)
        if call.tool != TOOL:
            raise ValueError(f"pending call {pending_id} is a {call.tool} call, not an AskUserQuestion")
        where.plugin_state(PLUGIN).setdefault("answers", {})[call.call_id] = {
            "questions": _questions_of(call.input), "answers": answers, "annotations": annotations or {}}
        return
    toolbox = where.toolbox if isinstance(where, Session) else where
    found = next((c for c in toolbox.pending_calls() if c.id == pending_id), None)
    if found is None:
        raise KeyError(pending_id)
    if found.tool != TOOL:
        raise ValueError(f"pending call {pending_id} is a {found.tool} call, not an AskUserQuestion")
    if found.status != "pending":
        raise ValueError(f"pending call {pending_id} was answered already ({found.status}); each pending call is "
                         "answered once")
    context = toolbox.context_for(PLUGIN)
    if context is None:
        raise ValueError("the ask_user plugin is not loaded in this toolbox")
    from sqlalchemy import delete, insert

    rows = _table()
    data = json.dumps({"questions": _questions_of(found.input), "answers": answers,
                       "annotations": annotations or {}})
    with context.store.begin() as conn:
        conn.execute(delete(rows).where(rows.c.session_id == found.session_id, rows.c.call_id == found.call_id))
        conn.execute(insert(rows).values(session_id=found.session_id, call_id=found.call_id, data=data))
    toolbox.answer_pending(pending_id, Answer(allow=True))


async def take_answers(ctx: ToolContext, call_input: dict[str, Any]) -> dict[str, Any] | None:
    """The answers recorded for this call (``answer_question``), taken once;
    None when there are none for these questions."""
    questions = _questions_of(call_input)
    if not ctx.session.durable:
        kept = ctx.state.get("answers", {})
        found = kept.get(ctx.call_id)
        if found is None or found["questions"] != questions:
            return None
        del kept[ctx.call_id]
        return dict(found)
    session_id, call_id = ctx.session.id, ctx.call_id

    def work(conn: Any) -> dict[str, Any] | None:
        from sqlalchemy import delete, select

        rows = _table()
        where = (rows.c.session_id == session_id, rows.c.call_id == call_id)
        row = conn.execute(select(rows.c.data).where(*where)).first()
        if row is None:
            return None
        data = json.loads(row[0])
        if not isinstance(data, dict) or data.get("questions") != questions:
            return None
        conn.execute(delete(rows).where(*where))
        return data

    result: dict[str, Any] | None = await ctx.store.run(work)
    return result

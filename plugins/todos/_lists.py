"""Where a session's task list lives: in the store for a durable session
(one row of ``todos_lists`` per session, so a resumed session has it from
any process), in the plugin's session state otherwise.

A change is read, made and written in one transaction, so two processes
working on one durable session never lose each other's change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pegboard import StoreSchema, ToolContext

__all__ = ["TABLE", "empty_list", "read_list", "change_list", "store_schema"]

TABLE = "todos_lists"
T = TypeVar("T")


def store_schema() -> StoreSchema:
    from sqlalchemy import Column, MetaData, String, Table, Text

    from pegboard import StoreSchema

    metadata = MetaData()
    Table(TABLE, metadata,
          Column("session_id", String(64), primary_key=True),
          # {"tasks": [...], "next_id": n, "todos": [...]}: read and written whole
          Column("data", Text, nullable=False))
    return StoreSchema(metadata=metadata, version=1)


def empty_list() -> dict[str, Any]:
    return {"tasks": [], "next_id": 1, "todos": []}


def _table() -> Any:
    from sqlalchemy import column, table

    return table(TABLE, column("session_id"), column("data"))


def _load(conn: Any, session_id: str) -> tuple[dict[str, Any], bool]:
    from sqlalchemy import select

    rows = _table()
    row = conn.execute(select(rows.c.data).where(rows.c.session_id == session_id)).first()
    if row is None:
        return empty_list(), False
    data = json.loads(row[0])
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise ValueError(f"the stored task list of session {session_id!r} is not one (table {TABLE})")
    return {**empty_list(), **data}, True


async def read_list(ctx: ToolContext) -> dict[str, Any]:
    """The session's list as it is now."""
    if not ctx.session.durable:
        return ctx.state.setdefault("list", empty_list())
    session_id = ctx.session.id
    doc, _ = await ctx.store.run(lambda conn: _load(conn, session_id), read_only=True)
    return doc


async def change_list(ctx: ToolContext, change: Callable[[dict[str, Any]], T]) -> tuple[dict[str, Any], T]:
    """Apply ``change`` to the session's list (it edits the dict in place and
    returns what the caller wants back); what it raises leaves the list as
    it was."""
    if not ctx.session.durable:
        current = ctx.state.setdefault("list", empty_list())
        draft = json.loads(json.dumps(current))
        out = change(draft)
        ctx.state["list"] = draft
        return draft, out
    session_id = ctx.session.id

    def work(conn: Any) -> tuple[dict[str, Any], T]:
        from sqlalchemy import insert, update

        doc, existed = _load(conn, session_id)
        out = change(doc)
        rows = _table()
        text = json.dumps(doc, sort_keys=True)
        if existed:
            conn.execute(update(rows).where(rows.c.session_id == session_id).values(data=text))
        else:
            conn.execute(insert(rows).values(session_id=session_id, data=text))
        return doc, out

    return await ctx.store.run(work)

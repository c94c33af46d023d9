"""Where children live: their records (the spawn's terms, state, turns) and
their conversations.

A child of a durable session (one with an id, ``pegboard call --session``)
is kept in the store, so a follow-up works from another process and after a
restart; a child of a session without an id lives as long as the process,
in memory. Both answer the same questions (``Records``).

One follow-up at a time per child: a run claims the child first
(``claim``), atomically in the store, and a second claim is refused until
the first run releases it. A claim held by a process that has died (same
host, its pid gone) is taken over rather than blocking the child forever.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pegboard import PluginStore, StoreSchema

__all__ = ["AgentRecord", "MemoryRecords", "Records", "StoreRecords", "Terms", "store_schema"]

AGENTS = "subtasks_agents"
MESSAGES = "subtasks_messages"


@dataclass(frozen=True)
class Terms:
    """What a child was spawned under; every follow-up runs under them again."""

    agent_type: str
    label: str
    mode: str
    depth: int
    depth_limit: int
    hide: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    agent_types: tuple[str, ...] | None = None
    model: str | None = None
    max_turns: int = 50
    system_prompt: str = ""
    working_dirs: tuple[str, ...] = ()
    worktree: dict[str, str] | None = None
    name: str | None = None
    access: dict[str, Literal["none", "read", "full"]] = field(default_factory=dict)
    """What it was granted of tools sub-agents get only when given (``Session.child``'s ``access``)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Terms:
        data = json.loads(text)
        for key in ("hide", "working_dirs"):
            data[key] = tuple(data.get(key) or ())
        for key in ("only", "agent_types"):
            if data.get(key) is not None:
                data[key] = tuple(data[key])
        return cls(**data)


@dataclass(frozen=True)
class AgentRecord:
    id: str
    parent_id: str
    terms: Terms
    state: str = "running"
    """running, idle (waiting for a follow-up), stopped, failed."""
    turns: int = 0
    """Prompts it has answered (the first one and each follow-up)."""
    report: str = ""
    created_at: float = field(default_factory=time.time)
    last_active: float = field(default_factory=time.time)
    busy: bool = False
    stale: bool = False
    """Claimed by a process that has ended (its run can be taken over)."""

    @property
    def shown_state(self) -> str:
        if self.stale:
            return "stopped (its process ended)"
        return self.state


class Records:
    """The questions every backend answers."""

    async def create(self, record: AgentRecord) -> str:
        """Add a child, claimed for its first run; the claim's token."""
        raise NotImplementedError

    async def find(self, parent_id: str, key: str) -> AgentRecord | None:
        """The child of ``parent_id`` with that id or name (never another session's)."""
        raise NotImplementedError

    async def children(self, parent_id: str) -> list[AgentRecord]:
        raise NotImplementedError

    async def claim(self, agent_id: str) -> str | None:
        """Claim a child for one run; None when another run holds it."""
        raise NotImplementedError

    async def finish(self, agent_id: str, token: str, *, state: str, turns: int, report: str) -> None:
        raise NotImplementedError

    async def messages(self, agent_id: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def save_messages(self, agent_id: str, messages: list[dict[str, Any]], saved: int) -> int:
        """Keep ``messages`` (``saved`` of them are kept already); returns how many are kept now."""
        raise NotImplementedError

    async def delete(self, agent_id: str) -> list[str]:
        """Forget a child and everything below it; the ids forgotten."""
        raise NotImplementedError


def _token() -> str:
    return secrets.token_hex(8)


class MemoryRecords(Records):
    """Children of a session without an id: this process only."""

    def __init__(self) -> None:
        self._records: dict[str, AgentRecord] = {}
        self._claims: dict[str, str] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}

    async def create(self, record: AgentRecord) -> str:
        self._records[record.id] = record
        token = self._claims[record.id] = _token()
        return token

    async def find(self, parent_id: str, key: str) -> AgentRecord | None:
        for record in self._records.values():
            if record.parent_id == parent_id and key in (record.id, record.terms.name):
                return self._shown(record)
        return None

    async def children(self, parent_id: str) -> list[AgentRecord]:
        return [self._shown(r) for r in self._records.values() if r.parent_id == parent_id]

    def _shown(self, record: AgentRecord) -> AgentRecord:
        return replace(record, busy=record.id in self._claims)

    async def claim(self, agent_id: str) -> str | None:
        if agent_id in self._claims or agent_id not in self._records:
            return None
        token = self._claims[agent_id] = _token()
        self._records[agent_id] = replace(self._records[agent_id], state="running", last_active=time.time())
        return token

    async def finish(self, agent_id: str, token: str, *, state: str, turns: int, report: str) -> None:
        if self._claims.get(agent_id) == token:
            del self._claims[agent_id]
        if agent_id in self._records:
            self._records[agent_id] = replace(self._records[agent_id], state=state, turns=turns, report=report,
                                              last_active=time.time())

    async def messages(self, agent_id: str) -> list[dict[str, Any]]:
        return list(self._messages.get(agent_id, []))

    async def save_messages(self, agent_id: str, messages: list[dict[str, Any]], saved: int) -> int:
        self._messages[agent_id] = list(messages)
        return len(messages)

    async def delete(self, agent_id: str) -> list[str]:
        gone = [agent_id]
        for index in range(len(gone) + len(self._records)):  # breadth first, each child once
            if index >= len(gone):
                break
            gone += [r.id for r in self._records.values() if r.parent_id == gone[index] and r.id not in gone]
        for gid in gone:
            self._records.pop(gid, None)
            self._claims.pop(gid, None)
            self._messages.pop(gid, None)
        return gone


# --- the store ------------------------------------------------------------------------


def store_schema() -> StoreSchema:
    from sqlalchemy import Column, Float, Index, Integer, MetaData, String, Table, Text

    from pegboard import StoreSchema

    metadata = MetaData()
    # session_id is the parent's: a child belongs to the session that made it,
    # and goes with it.
    Table(AGENTS, metadata,
          Column("id", String(64), primary_key=True),
          Column("session_id", String(64), nullable=False, index=True),
          Column("name", String(64), nullable=True),
          Column("agent_type", String(64), nullable=False),
          Column("terms", Text, nullable=False),
          Column("state", String(16), nullable=False),
          Column("turns", Integer, nullable=False),
          Column("report", Text, nullable=False),
          Column("created_at", Float, nullable=False),
          Column("last_active", Float, nullable=False),
          Column("busy", String(32), nullable=True),
          Column("busy_pid", Integer, nullable=True),
          Column("busy_host", String(255), nullable=True),
          Column("busy_since", Float, nullable=True))
    # session_id is the child's own: its conversation goes with its session.
    Table(MESSAGES, metadata,
          Column("agent_id", String(64), primary_key=True),
          Column("seq", Integer, primary_key=True),
          Column("session_id", String(64), nullable=False),
          Column("message", Text, nullable=False),
          Index("ix_subtasks_messages_session", "session_id"))
    return StoreSchema(metadata=metadata, version=1)


def _tables() -> tuple[Any, Any]:
    from sqlalchemy import column, table

    agents = table(AGENTS, *(column(c) for c in (
        "id", "session_id", "name", "agent_type", "terms", "state", "turns", "report", "created_at", "last_active",
        "busy", "busy_pid", "busy_host", "busy_since")))
    messages = table(MESSAGES, column("agent_id"), column("seq"), column("session_id"), column("message"))
    return agents, messages


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process holding a claim may still be running (a claim from
    another host is assumed to be: only that host can tell)."""
    if pid is None or host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StoreRecords(Records):
    """Children of a durable session, in the plugin's store tables."""

    def __init__(self, store: PluginStore):
        self._store = store

    def _record(self, row: Any) -> AgentRecord:
        busy = row.busy is not None
        return AgentRecord(id=row.id, parent_id=row.session_id, terms=Terms.from_json(row.terms), state=row.state,
                           turns=row.turns, report=row.report, created_at=row.created_at,
                           last_active=row.last_active, busy=busy,
                           stale=busy and not _alive(row.busy_pid, row.busy_host))

    def _claim_values(self, token: str) -> dict[str, Any]:
        return {"busy": token, "busy_pid": os.getpid(), "busy_host": socket.gethostname(),
                "busy_since": time.time(), "state": "running", "last_active": time.time()}

    async def create(self, record: AgentRecord) -> str:
        agents, _ = _tables()
        token = _token()

        def write(conn: Any) -> None:
            conn.execute(agents.insert().values(
                id=record.id, session_id=record.parent_id, name=record.terms.name, agent_type=record.terms.agent_type,
                terms=record.terms.to_json(), turns=record.turns, report=record.report,
                created_at=record.created_at, **self._claim_values(token)))

        await self._store.run(write)
        return token

    async def find(self, parent_id: str, key: str) -> AgentRecord | None:
        from sqlalchemy import or_, select

        agents, _ = _tables()

        def read(conn: Any) -> Any:
            return conn.execute(select(agents).where(agents.c.session_id == parent_id,
                                                     or_(agents.c.id == key, agents.c.name == key))).first()

        row = await self._store.run(read, read_only=True)
        return self._record(row) if row is not None else None

    async def children(self, parent_id: str) -> list[AgentRecord]:
        from sqlalchemy import select

        agents, _ = _tables()

        def read(conn: Any) -> list[Any]:
            return list(conn.execute(select(agents).where(agents.c.session_id == parent_id)
                                     .order_by(agents.c.created_at)))

        return [self._record(r) for r in await self._store.run(read, read_only=True)]

    async def claim(self, agent_id: str) -> str | None:
        from sqlalchemy import select, update

        agents, _ = _tables()
        token = _token()

        def take(conn: Any) -> bool:
            done = conn.execute(update(agents).where(agents.c.id == agent_id, agents.c.busy.is_(None))
                                .values(**self._claim_values(token)))
            if done.rowcount == 1:
                return True
            row = conn.execute(select(agents.c.busy, agents.c.busy_pid, agents.c.busy_host)
                               .where(agents.c.id == agent_id)).first()
            if row is None or row.busy is None or _alive(row.busy_pid, row.busy_host):
                return False
            # Its process died mid-run: the child is free again.
            done = conn.execute(update(agents).where(agents.c.id == agent_id, agents.c.busy == row.busy)
                                .values(**self._claim_values(token)))
            return bool(done.rowcount == 1)

        return token if await self._store.run(take) else None

    async def finish(self, agent_id: str, token: str, *, state: str, turns: int, report: str) -> None:
        from sqlalchemy import update

        agents, _ = _tables()

        def write(conn: Any) -> None:
            conn.execute(update(agents).where(agents.c.id == agent_id, agents.c.busy == token).values(
                state=state, turns=turns, report=report, last_active=time.time(), busy=None, busy_pid=None,
                busy_host=None, busy_since=None))

        await self._store.run(write)

    async def messages(self, agent_id: str) -> list[dict[str, Any]]:
        from sqlalchemy import select

        _, messages = _tables()

        def read(conn: Any) -> list[str]:
            return [m for (m,) in conn.execute(select(messages.c.message).where(messages.c.agent_id == agent_id)
                                               .order_by(messages.c.seq))]

        return [json.loads(m) for m in await self._store.run(read, read_only=True)]

    async def save_messages(self, agent_id: str, items: list[dict[str, Any]], saved: int) -> int:
        from sqlalchemy import delete

        _, messages = _tables()
        start = saved if saved <= len(items) else 0

        def write(conn: Any) -> None:
            if start == 0:
                conn.execute(delete(messages).where(messages.c.agent_id == agent_id))
            rows = [{"agent_id": agent_id, "seq": seq, "session_id": agent_id, "message": json.dumps(item)}
                    for seq, item in enumerate(items[start:], start)]
            if rows:
                conn.execute(messages.insert(), rows)

        if start < len(items) or start == 0:
            await self._store.run(write)
        return len(items)

    async def delete(self, agent_id: str) -> list[str]:
        from sqlalchemy import delete, select

        agents, messages = _tables()

        def write(conn: Any) -> list[str]:
            gone = [agent_id]
            frontier = [agent_id]
            while frontier:
                frontier = [i for (i,) in conn.execute(select(agents.c.id).where(agents.c.session_id.in_(frontier)))
                            if i not in gone]
                gone += frontier
            conn.execute(delete(messages).where(messages.c.agent_id.in_(gone)))
            conn.execute(delete(agents).where(agents.c.id.in_(gone)))
            return gone

        return list(await self._store.run(write))

"""Several ``pegboard serve --http`` processes on one store, as one server.

Each replica says it is alive in ``mcp_serve_replicas`` every few seconds.
A call that asks, with ``approvals = "approvers"``, becomes a pending call
in the core's table (``Answer.later()``); the replica that holds the
client's request records that it waits on it (``mcp_serve_waiting``) and
looks at the store until someone answers (on any replica's approvals page,
or ``pegboard approvals``), then settles it through the session
(``session.pending.resolve``: run with the approval, or the denial told),
and answers the request. Nobody answering within ``approval_timeout_s`` is
a denial.

When the replica or the request goes away first, nothing is lost and
nothing runs twice:

* a request that ends (the client gave up, the replica is stopping) leaves
  its call to whoever asks again: the row's replica is cleared;
* a replica that stops saying it is alive for ``replica_timeout_s`` is
  taken for dead, and its calls with it;
* the same call asked again in the same session (a client's retry, which
  reaches another replica) takes such a call over and waits on it, with
  the answer it may already have;
* a call nobody took over within twice ``replica_timeout_s`` more is
  refused by whichever replica notices first: a waiting one is denied ("the server
  that held it stopped"), an approved one is settled without running (its
  requester is gone; asking again asks again). Each pending call changes
  state once (the core's conditional update), so two replicas racing never
  both settle it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from typing import Any

from pegboard import Answer, ToolResult

__all__ = ["Team", "serve_session_id"]

POLL_S = 0.5
ABANDONED_AFTER = 3
"""A call nobody waits on is refused after this many ``replica_timeout_s``."""
SESSION_PREFIX = "serve-"


def serve_session_id(key: str) -> str:
    """The durable session id of a client (or of a handshake-era MCP session) on any replica."""
    import hashlib

    return SESSION_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Team:
    """This replica's part: its heartbeat, the calls it waits on, and clearing up after replicas that died."""

    def __init__(self, toolbox: Any, store: Any, log: Any, *, address: str, approval_timeout_s: float,
                 replica_timeout_s: float):
        self.toolbox = toolbox
        self.store = store
        self.log = log
        self.address = address
        self.approval_timeout_s = approval_timeout_s
        self.replica_timeout_s = replica_timeout_s
        self.id = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(3)}"
        self.alive = False
        """The last heartbeat reached the store (readiness says so)."""
        self.problem: str | None = None

    @property
    def heartbeat_s(self) -> float:
        return max(0.2, self.replica_timeout_s / 5)

    # --- the replica's life -----------------------------------------------------------

    async def join(self) -> None:
        from ._serve_tables import replicas

        now = time.time()

        def add(conn: Any) -> None:
            conn.execute(replicas.insert().values(id=self.id, address=self.address, started_at=now, last_seen=now))

        await self.store.run(add)
        self.alive = True
        self.log.event("replica.joined", address=self.address, replica_timeout_s=self.replica_timeout_s)

    async def run(self) -> None:
        """Heartbeat and clear-up, until cancelled."""
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self.store.run(self._beat)
                if not self.alive:
                    self.log.event("replica.store_back")
                self.alive, self.problem = True, None
            except Exception as exc:
                if self.alive:
                    self.log.event("replica.store_failed", level="error", why=self.store.describe_error(exc))
                self.alive, self.problem = False, self.store.describe_error(exc)
                continue
            try:
                await self._clear_up()
            except Exception as exc:  # one bad row must not stop the heartbeat
                self.log.event("replica.clear_up_failed", level="error", why=f"{type(exc).__name__}: {exc}")

    def _beat(self, conn: Any) -> None:
        from sqlalchemy import update

        from ._serve_tables import replicas

        now = time.time()
        changed = conn.execute(update(replicas).where(replicas.c.id == self.id).values(last_seen=now)).rowcount
        if not changed:  # taken for dead while the store was away: back again
            conn.execute(replicas.insert().values(id=self.id, address=self.address, started_at=now, last_seen=now))

    async def leave(self) -> None:
        """A clean stop: the calls this replica waited on are left to whoever asks again."""
        from sqlalchemy import delete, update

        from ._serve_tables import replicas, waiting

        def gone(conn: Any) -> None:
            conn.execute(update(waiting).where(waiting.c.replica == self.id).values(replica=None,
                                                                                     updated_at=time.time()))
            conn.execute(delete(replicas).where(replicas.c.id == self.id))

        try:
            await self.store.run(gone)
        except Exception as exc:
            self.log.event("replica.leave_failed", level="warning", why=self.store.describe_error(exc))
        self.log.event("replica.left")

    # --- waiting on a pending call --------------------------------------------------------

    async def hold(self, session: Any, pending_id: str) -> None:
        from ._serve_tables import waiting

        client = session.client.id if session.client is not None else None

        def add(conn: Any) -> None:
            conn.execute(waiting.insert().values(pending_id=pending_id, session_id=session.id, client=client,
                                                 replica=self.id, updated_at=time.time()))

        await self.store.run(add)
        self.log.event("approval.waiting", pending=pending_id, session=session.id, client=client)

    async def take_over(self, session: Any, tool: str, arguments: dict[str, Any]) -> str | None:
        """A pending call of ``session`` for this very call that nobody waits
        on any more (its request or its replica gone): claimed for this
        request, its id; else None."""
        from sqlalchemy import and_, or_, select, update

        from ._serve_tables import replicas, waiting

        calls = [c for c in await asyncio.to_thread(session.pending.list)
                 if c.tool == tool and c.input == arguments]
        if not calls:
            return None
        dead_before = time.time() - self.replica_timeout_s
        ids = [c.id for c in calls]

        def claim(conn: Any) -> str | None:
            live = select(replicas.c.id).where(replicas.c.last_seen >= dead_before)
            for pending_id in ids:
                taken = conn.execute(update(waiting).where(
                    and_(waiting.c.pending_id == pending_id,
                         or_(waiting.c.replica.is_(None), waiting.c.replica.not_in(live))))
                    .values(replica=self.id, updated_at=time.time())).rowcount
                if taken:
                    return pending_id
            return None

        found = await self.store.run(claim)
        if found is not None:
            self.log.event("approval.taken_over", pending=found, session=session.id,
                           client=session.client.id if session.client else None)
        return found

    async def wait(self, session: Any, pending_id: str, progress: Any = None) -> ToolResult:
        """Until the call is answered (or its time is up), then settle it here."""
        deadline = time.monotonic() + self.approval_timeout_s
        client = session.client.id if session.client is not None else None
        if progress is not None:
            await progress(f"waiting for an approver (pending call {pending_id})")
        released = False
        try:
            while True:
                call = await asyncio.to_thread(session.pending.get, pending_id)
                if call is None:
                    self.log.event("approval.settled_elsewhere", pending=pending_id, client=client)
                    released = True
                    return ToolResult.error(f"Pending call {pending_id} was settled elsewhere while this request "
                                            "waited (its time ran out, or the server that held it was taken for "
                                            "stopped); nothing was run by this request. Make the call again if "
                                            "it is still needed: it will be asked again.")
                if call.status != "pending":
                    break
                if time.monotonic() >= deadline:
                    try:
                        await asyncio.to_thread(self.toolbox.answer_pending, pending_id, Answer(
                            allow=False, message=f"no approver answered within {self.approval_timeout_s:g} s"))
                        self.log.event("approval.timed_out", pending=pending_id, client=client)
                    except (KeyError, ValueError):
                        pass  # answered meanwhile: that answer stands
                    continue
                await asyncio.sleep(POLL_S)
            result: ToolResult = await session.pending.resolve(pending_id)
            answer = call.answer
            self.log.event("approval.settled", pending=pending_id, client=client, tool=call.tool,
                           allowed=bool(answer and answer.allow), by=getattr(answer, "approver", None),
                           is_error=result.is_error)
            released = True
            return result
        finally:
            await asyncio.shield(self._release(pending_id, done=released))

    async def _release(self, pending_id: str, *, done: bool) -> None:
        from sqlalchemy import delete, update

        from ._serve_tables import waiting

        def release(conn: Any) -> None:
            if done:
                conn.execute(delete(waiting).where(waiting.c.pending_id == pending_id))
            else:  # the request went away: whoever asks again takes it over
                conn.execute(update(waiting).where(waiting.c.pending_id == pending_id, waiting.c.replica == self.id)
                             .values(replica=None, updated_at=time.time()))

        try:
            await self.store.run(release)
        except Exception as exc:
            self.log.event("approval.release_failed", level="warning", pending=pending_id,
                           why=self.store.describe_error(exc))

    # --- replicas that died -----------------------------------------------------------------

    async def _clear_up(self) -> None:
        """Refuse the calls nobody waits on and nobody took over in time."""
        from sqlalchemy import and_, delete, or_, select, update

        from ._serve_tables import replicas, waiting

        now = time.time()
        # Taken for dead after replica_timeout_s of silence; its calls (and those whose request
        # went away) are left that long twice more for the same call asked again to take them over.
        given_up = now - ABANDONED_AFTER * self.replica_timeout_s

        def abandoned() -> Any:
            heard_since = select(replicas.c.id).where(replicas.c.last_seen >= given_up)
            return and_(waiting.c.updated_at < given_up,
                        or_(waiting.c.replica.is_(None), waiting.c.replica.not_in(heard_since)))

        def orphans(conn: Any) -> list[tuple[str, str]]:
            rows = conn.execute(select(waiting.c.pending_id, waiting.c.session_id).where(abandoned()))
            found = [(r.pending_id, r.session_id) for r in rows]
            conn.execute(delete(replicas).where(replicas.c.last_seen < now - 10 * self.replica_timeout_s))
            return found

        for pending_id, session_id in await self.store.run(orphans):
            def claim(conn: Any, pending_id: str = pending_id) -> bool:
                return bool(conn.execute(update(waiting).where(and_(waiting.c.pending_id == pending_id, abandoned()))
                                         .values(replica=self.id, updated_at=time.time())).rowcount)

            if await self.store.run(claim):
                await self._refuse(pending_id, session_id)

    async def _refuse(self, pending_id: str, session_id: str) -> None:
        """Settle an abandoned call without running it. A waiting one is
        denied; an approved one is settled in a session that offers nothing
        (level none), so that its approval runs nothing: its requester is gone."""
        why = ("the pegboard serve replica that held it stopped (or its client went away) and no one asked "
               "for it again in time; nothing was run")
        try:
            await asyncio.to_thread(self.toolbox.answer_pending, pending_id, Answer(allow=False, message=why))
        except (KeyError, ValueError):
            pass  # answered already (or settled): settled below as it stands
        session = self.toolbox.session("none", session_id=session_id)
        try:
            result = await session.pending.resolve(pending_id)
        finally:
            await session.aclose()
        await self._release(pending_id, done=True)
        self.log.event("approval.refused_abandoned", level="warning", pending=pending_id, session=session_id,
                       result=" ".join(getattr(c, "text", "") for c in result.content)[:300])

"""A call's output as it comes: ``Session.stream``.

The events a call emits while it runs (``ctx.emit``, ``ctx.output``: a
command's lines, an MCP server's progress) are yielded as they happen, then
the call's result is kept on the stream. Background work the call started
(a Monitor's watch, a call run with ``background``) is followed until it
ends, so its lines come too; its end is the event ``background.done``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._api.tasks import FOLLOWER

if TYPE_CHECKING:
    from .._api.decisions import Answer
    from .session import Session
    from .._api.tools import ToolResult

__all__ = ["CallEvent", "CallStream"]

# Events held for a reader that has not caught up; past this the oldest go (and the reader is told).
MAX_QUEUED = 10_000

@dataclass(frozen=True)
class CallEvent:
    """One thing a call told the host while it ran (an event of ``pegboard_event``)."""

    kind: str
    """The event's kind: ``bash.line``, ``monitor.line``, ``progress``, ``background.done``, ..."""
    data: Mapping[str, Any]
    """The event's data: ``tool``, ``call_id`` and the tool's own keys."""

    @property
    def text(self) -> str | None:
        """The output the event carries for a person to see (``ctx.output``'s text: a line of a
        command's output, a progress message), or None for an event that carries none."""
        text = self.data.get("text")
        return text if isinstance(text, str) else None


class CallStream:
    """One call whose events are read as they come: ``async for event in
    session.stream(name, input)``; then ``stream.result`` is the call's
    result. Reading it starts the call; leaving the loop early cancels the
    call (background work it started goes on, as the session's)."""

    def __init__(self, session: Session, name: str, arguments: Any, *, call_id: str, approval: Answer | None,
                 timeout_s: float | None):
        self._session = session
        self._name = name
        self._arguments = arguments
        self.call_id = call_id
        """The call's id (the events' ``call_id``)."""
        self._approval = approval
        self._timeout_s = timeout_s
        self.result: ToolResult | None = None
        """The call's result, once it returned (None before)."""
        self._queue: deque[CallEvent] = deque()
        self._dropped = 0
        self._following: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._read = False

    def __aiter__(self) -> AsyncIterator[CallEvent]:
        if self._read:
            raise RuntimeError("a call's stream can be read once")
        self._read = True
        return self._events()

    # --- what the session hands over (Session.emit) --------------------------

    def deliver(self, kind: str, data: Mapping[str, Any]) -> None:
        """Take one event; safe from any thread (a tool's worker thread emits too)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        event = CallEvent(kind, dict(data))
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            self._put(event)
        else:
            loop.call_soon_threadsafe(self._put, event)

    def follow(self, task_id: str) -> None:
        """Keep reading until background task ``task_id`` (started by the call) ends."""
        self._following.add(task_id)
        self._session._streams[task_id] = self

    def _put(self, event: CallEvent) -> None:
        if len(self._queue) >= MAX_QUEUED:
            self._queue.popleft()
            self._dropped += 1
        self._queue.append(event)
        if event.kind == "background.done":
            self._following.discard(str(event.data.get("id")))
        if self._wake is not None:
            self._wake.set()

    # --- reading ---------------------------------------------------------------

    async def _events(self) -> AsyncIterator[CallEvent]:
        loop = self._loop = asyncio.get_running_loop()
        wake = self._wake = asyncio.Event()
        streams = self._session._streams
        streams[self.call_id] = self
        token = FOLLOWER.set(self.follow)  # the call's task copies it: tasks started inside are followed
        try:
            task = loop.create_task(self._session.call(self._name, self._arguments, call_id=self.call_id,
                                                       approval=self._approval, timeout_s=self._timeout_s))
        finally:
            FOLLOWER.reset(token)
        task.add_done_callback(lambda _: wake.set())
        try:
            while True:
                while self._queue:
                    if self._dropped:
                        dropped, self._dropped = self._dropped, 0
                        yield CallEvent("stream.dropped", {"call_id": self.call_id, "dropped": dropped})
                    yield self._queue.popleft()
                if task.done():
                    if self.result is None:
                        self.result = task.result()
                    if not self._following:
                        break
                wake.clear()
                if not self._queue:
                    await wake.wait()
        finally:
            for key in [self.call_id, *self._following]:
                if streams.get(key) is self:
                    del streams[key]
            if not task.done():
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass

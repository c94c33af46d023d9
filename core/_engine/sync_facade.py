"""The session's API for code that cannot await: ``session.sync``.

Scripts, notebooks and frameworks that call tools synchronously (LangChain's
``invoke``) run the async API on an event loop of the session's own, in a
thread of its own, and wait for the answer. Waiting works where an event loop
is already running in the caller's thread too (a notebook cell), which
``asyncio.run`` refuses; the one place it cannot work is the session's own
loop (a tool of the session calling ``session.sync``), which is refused with
an error instead of hanging.

One loop for the session's life, rather than ``asyncio.run`` per call:
background tasks a call starts (``run_in_background``, a Monitor) live on
that loop and keep running between calls. anyio's blocking portal does the
same, but its thread is joined at interpreter exit, so a session nobody
closed would hang the exit; this one's thread is a daemon.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .._api.decisions import Answer, Decision
    from .session import Session
    from .streams import CallEvent, CallStream
    from .._api.tools import ToolResult

__all__ = ["SyncCallStream", "SyncSession"]

T = TypeVar("T")


class SyncSession:
    """A session's calls, each blocking until its result (``session.sync``)."""

    def __init__(self, session: Session):
        self.session = session
        """The session whose calls these are."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        loop = self._started()
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("session.sync was called from the session's own event loop (a tool of the session?), "
                               "where waiting would never end: await the session's async API there instead")
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C in a script or a notebook stops the call too
            raise

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=f"pegboard-session-{self.session.id}",
                                          daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def call(self, name: str, arguments: Any = None, *, call_id: str | None = None, approval: Answer | None = None,
             timeout_s: float | None = None) -> ToolResult:
        """``Session.call``, blocking until the result."""
        return self._run(self.session.call(name, arguments, call_id=call_id, approval=approval,
                                           timeout_s=timeout_s))

    def call_batch(self, calls: Iterable[tuple[str, Any] | tuple[str, Any, str]]) -> list[ToolResult]:
        """``Session.call_batch``, blocking until every result."""
        return self._run(self.session.call_batch(list(calls)))

    def decide(self, name: str, input: Any = None) -> Decision:
        """``Session.decide``."""
        return self._run(self.session.decide(name, input))

    def resolve(self, pending_id: str, answer: Answer | None = None) -> ToolResult:
        """``session.pending.resolve``: settle a pending call, blocking until its result."""
        return self._run(self.session.pending.resolve(pending_id, answer))

    def stream(self, name: str, arguments: Any = None, *, call_id: str | None = None,
               approval: Answer | None = None, timeout_s: float | None = None) -> SyncCallStream:
        """``Session.stream``, read with a plain ``for``: each event as it comes,
        then ``stream.result``."""
        return SyncCallStream(self, self.session.stream(name, arguments, call_id=call_id, approval=approval,
                                                        timeout_s=timeout_s))

    def close(self) -> None:
        """Close the session (``Session.aclose``) and stop its loop and thread."""
        if self.session.closed and self._loop is None:
            return
        self._run(self.session.aclose())
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(5)
            if not loop.is_running():
                loop.close()

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncCallStream:
    """A ``CallStream`` read without awaiting: ``for event in stream``."""

    def __init__(self, owner: SyncSession, stream: CallStream):
        self._owner = owner
        self._stream = stream

    @property
    def result(self) -> ToolResult | None:
        """The call's result, once it returned (None before)."""
        return self._stream.result

    def __iter__(self) -> Iterator[CallEvent]:
        events = self._stream.__aiter__()
        try:
            while True:
                try:
                    yield self._owner._run(_next(events))
                except StopAsyncIteration:
                    return
        finally:
            self._owner._run(_closed(events))


async def _next(events: Any) -> Any:
    return await events.__anext__()


async def _closed(events: Any) -> None:
    await events.aclose()

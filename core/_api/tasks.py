"""Background tasks of one session."""

from __future__ import annotations

import inspect
import itertools
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from .._util.redact import redact

if TYPE_CHECKING:
    import asyncio

__all__ = ["FOLLOWER", "BackgroundTask", "BackgroundTasks"]

# Process-wide, so an id from one session never names a task of another
# (a model quoting a stale id gets "no such task", not someone else's).
_ids = itertools.count(1)

Status = Literal["running", "done", "failed", "stopped"]

FOLLOWER: ContextVar[Callable[[str], None] | None] = ContextVar("pegboard_task_follower", default=None)
"""Who follows the background work started here, told each task's id: a
streamed call (``Session.stream``) sets it while its call runs, and the
call's task copies it, so the tasks started inside it are followed."""


@dataclass
class BackgroundTask:
    id: str
    kind: str
    description: str
    started: float
    status: Status = "running"
    result: Any = None
    error: str | None = None
    ended: float | None = None
    on_stop: Callable[[], Awaitable[None] | None] | None = None
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)
    _work: Coroutine[Any, Any, Any] | None = field(default=None, repr=False)
    _reported: bool = field(default=False, repr=False)

    @property
    def runtime_s(self) -> float:
        return round((self.ended or time.monotonic()) - self.started, 3)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "description": self.description, "status": self.status,
                "error": self.error, "runtime_s": self.runtime_s}


class BackgroundTasks:
    """Start, list, fetch and stop a session's background work.

    When a task ends (done, failed or stopped), the host hears of it exactly
    once through the ``pegboard_event`` hook as ``background.done`` with the
    task's id, status and result.
    """

    def __init__(self, emit: Callable[[str, dict[str, Any]], None]):
        self._emit = emit  # the session's: how the host hears of a task that ended
        self._tasks: dict[str, BackgroundTask] = {}

    def start(self, work: Coroutine[Any, Any, Any], *, kind: str, description: str = "",
              on_stop: Callable[[], Awaitable[None] | None] | None = None) -> str:
        task_id = f"task-{next(_ids)}"
        record = BackgroundTask(task_id, kind, description, time.monotonic(), on_stop=on_stop, _work=work)
        self._tasks[task_id] = record
        import asyncio  # here, not at the top: start-up never needs it

        record._task = asyncio.get_running_loop().create_task(self._run(record, work), name=task_id)
        follow = FOLLOWER.get()
        if follow is not None:  # a streamed call follows the work it starts
            follow(task_id)
        return task_id

    async def _run(self, record: BackgroundTask, work: Coroutine[Any, Any, Any]) -> None:
        import asyncio

        try:
            record.result = await work
            self._finish(record, "done")
        except asyncio.CancelledError:
            self._finish(record, "stopped")
        except (Exception, SystemExit) as exc:  # one task's crash must not reach the loop
            record.error = f"{type(exc).__name__}: {exc}"
            self._finish(record, "failed")

    def _finish(self, record: BackgroundTask, status: Status) -> None:
        if record._reported:
            return
        record._reported = True
        record.status = status
        record.ended = time.monotonic()
        record._work = None
        self._emit("background.done", {**record.to_json(), "result": record.result})

    def get(self, task_id: str) -> BackgroundTask | None:
        return self._tasks.get(task_id)

    def list(self) -> list[BackgroundTask]:
        return list(self._tasks.values())

    async def stop(self, task_id: str) -> bool:
        """Stop a running task. False when there is no such running task."""
        record = self._tasks.get(task_id)
        if record is None or record.status != "running":
            return False
        if record.on_stop is not None:
            try:
                outcome = record.on_stop()
                if inspect.iscoroutine(outcome):
                    await outcome
            except Exception as exc:  # the task is stopped below regardless

                print(f"pegboard: on_stop of {task_id} failed: {redact(repr(exc))}", file=sys.stderr)
        if record._task is not None and not record._task.done():
            record._task.cancel()
            try:
                await record._task
            except BaseException:
                pass
        # A task cancelled before its first step never ran _run: close its
        # coroutine (else Python warns it was never awaited) and report it.
        if record._work is not None:
            record._work.close()
        self._finish(record, "stopped")
        return True

    async def stop_all(self) -> None:
        for record in list(self._tasks.values()):
            await self.stop(record.id)

    async def wait(self, task_id: str, timeout: float | None = None) -> BackgroundTask | None:
        """The task, after it ended or ``timeout`` seconds passed."""
        record = self._tasks.get(task_id)
        if record is not None and record._task is not None and not record._task.done():
            import asyncio

            await asyncio.wait({record._task}, timeout=timeout)
        return record

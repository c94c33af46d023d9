"""Background tasks of one session."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["BackgroundTask", "BackgroundTasks"]

_ids = itertools.count(1)


@dataclass
class BackgroundTask:
    id: str
    kind: str
    description: str
    started: float
    status: Literal["running", "done", "failed", "stopped"] = "running"
    result: Any = None
    error: str | None = None
    on_stop: Callable[[], Awaitable[None] | None] | None = None
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "description": self.description, "status": self.status,
                "error": self.error, "runtime_s": round(time.monotonic() - self.started, 3)}


class BackgroundTasks:
    """Start, list, fetch and stop a session's background work.

    When a task ends, the host hears of it through the ``pegboard_event``
    hook as ``background.done`` with the task's id, status and result.
    """

    def __init__(self, session: Session):
        self._session = session
        self._tasks: dict[str, BackgroundTask] = {}

    def start(self, work: Coroutine[Any, Any, Any], *, kind: str, description: str = "",
              on_stop: Callable[[], Awaitable[None] | None] | None = None) -> str:
        task_id = f"task-{next(_ids)}"
        record = BackgroundTask(task_id, kind, description, time.monotonic(), on_stop=on_stop)
        self._tasks[task_id] = record
        record._task = asyncio.get_running_loop().create_task(self._run(record, work))
        return task_id

    async def _run(self, record: BackgroundTask, work: Coroutine[Any, Any, Any]) -> None:
        try:
            record.result = await work
            record.status = "done"
        except asyncio.CancelledError:
            record.status = "stopped"
        except Exception as exc:
            record.status = "failed"
            record.error = f"{type(exc).__name__}: {exc}"
        self._session.emit("background.done", {**record.to_json(), "result": record.result})

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
            outcome = record.on_stop()
            if asyncio.iscoroutine(outcome):
                await outcome
        if record._task is not None:
            record._task.cancel()
            try:
                await record._task
            except BaseException:
                pass
        record.status = "stopped"
        return True

    async def stop_all(self) -> None:
        for record in list(self._tasks.values()):
            await self.stop(record.id)

    async def wait(self, task_id: str, timeout: float | None = None) -> BackgroundTask | None:
        record = self._tasks.get(task_id)
        if record is not None and record._task is not None:
            await asyncio.wait({record._task}, timeout=timeout)
        return record

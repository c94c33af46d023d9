"""A stdio transport that owns its server's whole process group.

The SDK's ``stdio_client`` only signals the process group when the server
outlives its grace period; a server that exits cleanly on stdin close leaves
its own children (a ``npx`` wrapper's node process, a shell's pipeline)
running. Here the server leads a new session, and shutdown always ends with
the group, so grandchildren go too. Every live group is also remembered so
that interpreter exit stops whatever a crashed session left behind.
"""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import IO

import anyio
import anyio.abc
import mcp_types as types
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "kill_group", "stdio_transport"]

# Grace periods on shutdown: the spec asks us to close stdin first and give
# the server a moment; a session close should still not feel slow.
STDIN_GRACE_S = 1.0
TERM_GRACE_S = 1.0
_POLL_S = 0.01

_live_groups: set[int] = set()


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole group; False when it is already gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # zombies or foreign members: not proof the group is gone
    return True


def _group_alive(pgid: int) -> bool:
    return kill_group(pgid, 0)


@atexit.register
def _kill_leftovers() -> None:
    for pgid in list(_live_groups):
        kill_group(pgid, signal.SIGKILL)
    _live_groups.clear()


class StdioProcess:
    """What the manager learns about a running stdio server."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.returncode: int | None = None
        self.closed = anyio.Event()  # stdout ended: no answer will ever come


async def _wait_until(check: object, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while not check():  # type: ignore[operator]
            await anyio.sleep(_POLL_S)
        return True
    return False


async def _stop(process: anyio.abc.Process, pgid: int) -> None:
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _wait_until(lambda: process.returncode is not None, STDIN_GRACE_S):
        kill_group(pgid, signal.SIGTERM)
        if not await _wait_until(lambda: process.returncode is not None, TERM_GRACE_S):
            kill_group(pgid, signal.SIGKILL)
    # The leader is gone; its children may not be. The group outlives its
    # leader, so this reaches them even if they were reparented to init.
    if _group_alive(pgid):
        kill_group(pgid, signal.SIGTERM)
        if not await _wait_until(lambda: not _group_alive(pgid), TERM_GRACE_S):
            kill_group(pgid, signal.SIGKILL)
            # Let the kill land before we report the server stopped (bounded:
            # unreaped zombies keep a group "alive" under an init that never reaps).
            await _wait_until(lambda: not _group_alive(pgid), TERM_GRACE_S)
    _live_groups.discard(pgid)
    with anyio.move_on_after(TERM_GRACE_S):
        await process.wait()
    if process.stdout is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path | None,
    stderr: IO[bytes] | int | None,
    info: StdioProcess,
) -> AsyncIterator[TransportStreams]:
    process = await anyio.open_process(
        [command, *args], env=env, cwd=cwd, stderr=stderr, start_new_session=True
    )
    pgid = process.pid  # leader of a new session: its pid is the group id
    _live_groups.add(pgid)
    info.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        assert process.stdout is not None
        buffer = b""
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    lines = (buffer + chunk).split(b"\n")
                    buffer = lines.pop()
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message: SessionMessage | Exception = SessionMessage(
                                types.jsonrpc_message_adapter.validate_json(line, by_name=False))
                        except ValueError as exc:
                            message = exc
                        await read_writer.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            info.returncode = process.returncode
            info.closed.set()

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading: end the session's view of it too,
            # or a request would wait for an answer that cannot come.
            await read_writer.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                for stream in (read_stream, write_stream):
                    await stream.aclose()
                await _stop(process, pgid)
                info.returncode = process.returncode
            tg.cancel_scope.cancel()

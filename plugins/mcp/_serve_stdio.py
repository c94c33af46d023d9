"""``pegboard serve``'s stdio transport: newline-delimited JSON-RPC on the
real stdin and stdout, which serve owns.

The command claims stdout before anything else runs (``claim_stdout``): from
then on fd 1 and ``sys.stdout`` are stderr, so what a plugin, a library or a
child process prints cannot be read by the client as a message (what plugins
print while they are imported went to stderr already). Only the writer here
writes to the real stdout.

Every line the client sends is answered: one that is not JSON the server can
read (broken, or nested deeper than the SDK's parser goes) gets a -32700
parse error, one that is JSON but not a JSON-RPC message a -32600 invalid
request, with the request's id when its top level names one. The SDK's own
stdio transport drops such a line, leaving the client waiting for ever.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["claim_stdio", "error_reply", "stdio_streams", "top_level_id"]

_WHITESPACE = " \t\r\n"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The real stdin and stdout, for the transport alone: fd 1 (and
    ``sys.stdout``) become stderr, fd 0 the null device, so that neither a
    tool's child process nor a stray print touches the protocol."""
    from pegboard.cli import claim_stdout

    wire_out = claim_stdout()
    import fcntl

    wire_in = os.fdopen(fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return wire_in, wire_out


def top_level_id(text: str) -> str | int | None:
    """The ``id`` member of a JSON object, found by scanning its top level
    only: for a line too deep or too broken to decode whole. Linear in the
    line; never recurses into the values it skips."""
    n = len(text)
    i = 0
    while i < n and text[i] in _WHITESPACE:
        i += 1
    if i >= n or text[i] != "{":
        return None
    depth = 0
    while i < n:
        char = text[i]
        if char == '"':
            match = _STRING.match(text, i)
            if match is None:
                return None
            end = match.end()
            if depth == 1 and match.group() == '"id"':
                j = end
                while j < n and text[j] in _WHITESPACE:
                    j += 1
                if j < n and text[j] == ":":
                    j += 1
                    while j < n and text[j] in _WHITESPACE:
                        j += 1
                    try:
                        value, _ = json.JSONDecoder().raw_decode(text, j)
                    except (ValueError, RecursionError):
                        return None
                    valid = isinstance(value, (str, int)) and not isinstance(value, bool)
                    return value if valid else None
            i = end
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth <= 0:
                return None
        i += 1
    return None


def error_reply(line: str, exc: Exception) -> types.JSONRPCError:
    """The answer to a line that is not a JSON-RPC message the server can take."""
    unreadable = [e for e in exc.errors() if e.get("type") == "json_invalid"] if isinstance(exc, ValidationError) \
        else [{"msg": str(exc)}]
    if unreadable:
        detail = str(unreadable[0].get("msg", "")).removeprefix("Invalid JSON: ")
        error = types.ErrorData(code=types.PARSE_ERROR,
                                message=f"Parse error: the message is not JSON that can be read ({detail})")
    else:
        error = types.ErrorData(code=types.INVALID_REQUEST,
                                message="Invalid Request: the message is not a JSON-RPC 2.0 request, "
                                        "notification or response")
    return types.JSONRPCError(jsonrpc="2.0", id=top_level_id(line), error=error)


def _write_all(stream: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = stream.write(view)
        view = view[written or 0:]
    stream.flush()


@asynccontextmanager
async def stdio_streams(wire_in: BinaryIO, wire_out: BinaryIO) -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams ``Server.run`` takes, over ``wire_in`` and
    ``wire_out``; a line that cannot be taken is answered here."""
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    replies = write_send.clone()

    async def reader() -> None:
        async with read_send, replies:
            while True:
                # abandoned on cancel: a blocked read cannot be interrupted
                raw = await anyio.to_thread.run_sync(wire_in.readline, abandon_on_cancel=True)
                if not raw:
                    return
                line = raw.decode("utf-8", errors="replace")
                if not line.strip():
                    continue  # a blank line is no message
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:
                    await replies.send(SessionMessage(error_reply(line, exc)))
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_receive:
            async for item in write_receive:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await anyio.to_thread.run_sync(_write_all, wire_out, data.encode("utf-8"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        reading = anyio.CancelScope()

        async def read_until_cancelled() -> None:
            with reading:
                await reader()

        tg.start_soon(read_until_cancelled)
        try:
            yield read_receive, write_send
        finally:
            reading.cancel()
            write_send.close()

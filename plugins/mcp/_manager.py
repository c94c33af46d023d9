"""Running MCP servers for one session: start, watch, restart, stop.

Each server lives in its own asyncio task, because the SDK's ``Client`` must be
entered and left in the same task (anyio cancel scopes); calls come from any
task and go through the connected client. This module imports ``mcp``: only
handlers import it, never the plugin's entry point.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.stdio import get_default_environment
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from pegboard.cli import progress

from ._config import ServerSpec, expand_vars
from ._stdio import StdioProcess, stdio_transport

__all__ = ["ClientSide", "ServerConnection", "ServerUnavailable", "ToolCallTimeout", "describe_exception"]

State = Literal["stopped", "starting", "running", "failed"]

REQUEST_TIMEOUT = -32001
CONNECTION_CLOSED = -32000
INTERNAL_ERROR = -32603
USER_REJECTED = -1  # the specification's code for a sampling request the user rejected
MAX_BACKOFF_S = 30.0
STOP_TIMEOUT_S = 8.0
# Listing tools is paged; a server whose cursor never ends must not hang a start.
MAX_PAGES = 100


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass
class ClientSide:
    """What pegboard answers when a server asks its client something: the
    person (elicitation, through the session's host), the session's working
    directories (roots), where progress and log messages go (events), and
    the host's model for sampling, when the host offers one."""

    elicit: Callable[[str, str, dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    roots: Callable[[], Sequence[Path]] | None = None
    emit: Callable[[str, dict[str, Any]], None] | None = None
    log_level: str = "warning"
    sample: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
    """The host's model for a server's sampling request (``pegboard_mcp_sample``); None: not declared."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pegboard")
    except PackageNotFoundError:
        return "0"


class ServerUnavailable(Exception):
    """The server cannot take calls now; the message says why (for the model)."""


class NeedsSignIn(ServerUnavailable):
    """The server answered 401 (or 403 for more scope) and only the person can sign in."""

    def __init__(self, server: str, scope: str | None = None) -> None:
        self.server = server
        self.scope = scope
        more = f" (with scope {scope!r})" if scope else ""
        super().__init__(f"MCP server {server!r} needs you to sign in{more}: call mcp__{server}__authenticate, "
                         f"or the user can run `pegboard mcp login {server}`")


def _sign_in_error(exc: BaseException, server: str) -> NeedsSignIn | None:
    if "mcp.client.auth" not in sys.modules and "pegboard.plugins.mcp._auth" not in sys.modules:
        return None
    from ._auth import find_sign_in_required

    found = find_sign_in_required(exc)
    return NeedsSignIn(server, found.scope) if found is not None else None


class ToolCallTimeout(Exception):
    pass


def describe_exception(exc: BaseException) -> str:
    """One line for the model out of whatever a transport raised (groups included)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in exc.exceptions)
    if isinstance(exc, MCPError):
        message = exc.error.message
        # Some servers (and the SDK, re-raising) already start with the prefix.
        while message.startswith(f"MCP error {exc.error.code}: "):
            message = message[len(f"MCP error {exc.error.code}: "):]
        return f"MCP error {exc.error.code}: {message}"
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


def backoff_delay(failures: int) -> float:
    """The first restart is immediate (a crash is often a one-off); then 1, 2, 4 … 30 s."""
    if failures <= 1:
        return 0.0
    return min(MAX_BACKOFF_S, 2.0 ** (failures - 2))


class ServerConnection:
    """One server in one session."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        target: Any = None,
        log_dir: Path | None = None,
        on_listing: Callable[[ServerConnection, list[types.Tool]], None] | None = None,
        environ: Mapping[str, str] | None = None,
        mode: str = "auto",
        client_side: ClientSide | None = None,
        data_dir: Path | None = None,
        interaction: Any = None,
    ) -> None:
        self.spec = spec
        self.client_side = client_side or ClientSide()
        self.pending_sign_in: NeedsSignIn | None = None
        # Where OAuth tokens live (url servers); interaction: how a person signs in, if one can.
        self._data_dir = data_dir
        self._interaction = interaction
        # "auto" negotiates the newest protocol the server speaks; "legacy"
        # forces the handshake era (tests, servers whose discovery misbehaves).
        self._mode = spec.config.protocol if spec.config.protocol != "auto" else mode
        self.name = spec.name
        # An in-process server object (tests, embedding): no subprocess, no HTTP.
        self._target = target
        self._log_dir = log_dir
        self._own_log_dir: Path | None = None
        self._on_listing = on_listing
        self._environ = dict(os.environ if environ is None else environ)
        self.state: State = "stopped"
        self.reason: str | None = None
        self.failures = 0
        self.next_attempt = 0.0
        self.tools: dict[str, types.Tool] = {}
        self.client: Client | None = None
        self.process = StdioProcess()
        self.stderr_path: Path | None = None
        self.starts = 0
        self._task: asyncio.Task[None] | None = None
        self._stop: anyio.Event | None = None
        self._lock = asyncio.Lock()
        self._stopping = False
        self._list_changed = anyio.Event()

    # --- state ---------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.reason = reason
        self.failures += 1
        self.next_attempt = time.monotonic() + backoff_delay(self.failures)
        self.client = None

    def stderr_tail(self, limit: int = 800) -> str:
        if self.stderr_path is None:
            return ""
        try:
            data = self.stderr_path.read_bytes()[-limit:]
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()

    def _with_stderr(self, reason: str) -> str:
        tail = self.stderr_tail()
        return f"{reason}; its stderr ends with:\n{tail}" if tail else reason

    # --- connecting ------------------------------------------------------------

    def _transport(self) -> Any:
        cfg = self.spec.config
        if self._target is not None:
            return self._target
        if cfg.transport == "http":
            auth = None
            if self._data_dir is not None:
                from ._auth import build_auth

                auth = build_auth(self.spec, self._data_dir, self._environ, self._interaction)
            return _http_transport(expand_vars(cfg.url or "", self._environ),
                                   {k: expand_vars(v, self._environ) for k, v in cfg.headers.items()}, auth)
        env = get_default_environment() | {k: expand_vars(v, self._environ) for k, v in cfg.env.items()}
        cwd = Path(expand_vars(cfg.cwd, self._environ)) if cfg.cwd else self.spec.root
        if not cwd.is_absolute():
            cwd = self.spec.root / cwd
        if self._log_dir is None:
            # Never a fixed name in the shared temp folder: another user could
            # plant a symlink there. A private folder of our own instead,
            # removed when the server stops.
            self._log_dir = self._own_log_dir = Path(tempfile.mkdtemp(prefix="pegboard-mcp-"))
        folder = self._log_dir
        folder.mkdir(parents=True, exist_ok=True)
        self.stderr_path = folder / f"mcp-{self.name}.stderr.log"
        self.process = StdioProcess()
        # Opened here and handed to the child; our copy closes when the transport does.
        errlog = self.stderr_path.open("wb")
        return _closing(stdio_transport(
            expand_vars(cfg.command or "", self._environ),
            [expand_vars(a, self._environ) for a in cfg.args],
            env=env, cwd=cwd, stderr=errlog, info=self.process), errlog)

    async def _run(self, ready: asyncio.Future[None], stop: anyio.Event) -> None:
        try:
            listed = anyio.Event()
            self._list_changed = listed
            async with self._client() as client:
                await self._apply_log_level(client)
                await self._relist(client)
                self.client = client
                ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    async def finish_when(event: anyio.Event) -> None:
                        await event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(finish_when, stop)
                    tg.start_soon(finish_when, self.process.closed)
                    tg.start_soon(self._watch_tools, client)
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    # _start gave up waiting (its timeout) and cancelled us: nobody
                    # reads ready any more, and a cancelled future is never reported
                    # as an exception nobody retrieved.
                    ready.cancel()
                    raise
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(describe_exception(exc)))
                return
            if isinstance(exc, asyncio.CancelledError):
                raise
            if not self._stopping:
                sign_in = _sign_in_error(exc, self.name)
                if sign_in is not None:
                    # A 401 or a 403 for more scope mid-session: the calls in flight say so.
                    self.pending_sign_in = sign_in
                    self._fail(str(sign_in))
                    self.next_attempt = 0.0
                else:
                    self._fail(self._with_stderr(f"the connection to MCP server {self.name!r} failed: "
                                                 f"{describe_exception(exc)}"))
            return
        finally:
            self.client = None
        if not self._stopping and self.state == "running":
            code = self.process.returncode
            self._fail(self._with_stderr(
                f"MCP server {self.name!r} exited" + (f" with status {code}" if code is not None else "")))

    def _client(self) -> Client:
        """The SDK client, identifying as pegboard and declaring what this
        session can answer: elicitation only with a host to ask, roots
        always, sampling only when the host offers a model (``pegboard_mcp_sample``)."""
        side = self.client_side
        options: dict[str, Any] = {"list_roots_callback": self._roots, "logging_callback": self._log}
        if side.elicit is not None:
            options["elicitation_callback"] = self._elicit
        if side.sample is not None:
            options["sampling_callback"] = self._sample
        if side.log_level in LOG_LEVELS:
            options["log_level"] = side.log_level
        with warnings.catch_warnings():
            # Roots and protocol logging are deprecated in 2026-07-28 but
            # still what handshake-era servers use.
            warnings.simplefilter("ignore", UserWarning)
            return Client(self._transport(), mode=self._mode, message_handler=self._on_message,
                          client_info=types.Implementation(name="pegboard", version=_version()), **options)

    async def _apply_log_level(self, client: Client) -> None:
        """Handshake-era servers are told the level with logging/setLevel."""
        caps = client.server_capabilities
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS or caps is None or caps.logging is None:
            return
        with suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            await client.set_logging_level(self.client_side.log_level)  # type: ignore[arg-type]

    async def _elicit(self, context: Any, params: Any) -> Any:
        elicit = self.client_side.elicit
        schema = getattr(params, "requested_schema", None)
        if elicit is None or schema is None:
            # A URL-mode request (or no one to ask): pegboard declared form elicitation only.
            return types.ElicitResult(action="decline")
        answer = await elicit(f"MCP server {self.name!r}", params.message, dict(schema))
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    async def _sample(self, context: Any, params: Any) -> Any:
        """A server's sampling request, answered by the host's model; an
        error the server can read when the host passes, fails or answers
        something that is not a sampling result."""
        sample = self.client_side.sample
        if sample is None:
            return types.ErrorData(code=USER_REJECTED, message="pegboard has no model to sample with")
        request = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            answer = await sample(self.name, request)
        except Exception as exc:  # the host's bug is the server's error result, never pegboard's crash
            return types.ErrorData(code=INTERNAL_ERROR, message=f"the host's model failed: {describe_exception(exc)}")
        if answer is None:
            return types.ErrorData(code=USER_REJECTED, message="the sampling request was declined")
        if isinstance(answer, str):
            answer = {"role": "assistant", "content": {"type": "text", "text": answer}, "model": "pegboard-host"}
        try:
            return types.CreateMessageResult.model_validate(answer)
        except Exception as exc:
            return types.ErrorData(code=INTERNAL_ERROR,
                                   message=f"the host's answer is not a sampling result: {describe_exception(exc)}")

    async def _roots(self, context: Any) -> Any:
        folders = self.client_side.roots() if self.client_side.roots is not None else [self.spec.root]
        return types.ListRootsResult(roots=[
            types.Root(uri=Path(f).resolve().as_uri(), name=Path(f).name or str(f))
            for f in folders])

    async def _log(self, params: Any) -> None:
        if self.client_side.emit is None:
            return
        level = str(params.level)
        wanted = self.client_side.log_level
        if wanted in LOG_LEVELS and level in LOG_LEVELS and LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return  # a server that ignores setLevel still gets filtered here
        self.client_side.emit("mcp.log", {"server": self.name, "level": level, "logger": params.logger,
                                          "data": params.data})

    async def _relist(self, client: Client) -> None:
        tools = await _list_all_tools(client)
        self.tools = {t.name: t for t in tools}
        if self._on_listing is not None:
            self._on_listing(self, tools)

    async def _on_message(self, message: Any) -> None:
        # Handshake-era servers announce a new tool list with a notification.
        if isinstance(message, types.ToolListChangedNotification):
            self._list_changed.set()

    async def _watch_tools(self, client: Client) -> None:
        """Re-read the tool list when the server says it changed, so a tool
        redefined mid-session is caught (and asked about) without a restart."""
        caps = client.server_capabilities.tools
        try:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                if caps is None or not caps.list_changed:
                    return  # it offers no stream to listen to
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _ in subscription:
                        await self._relist(client)
            else:
                # A notification is honoured even from a server that did not
                # advertise list_changed: reading the list again costs little.
                while True:
                    await self._list_changed.wait()
                    self._list_changed = anyio.Event()
                    await self._relist(client)
        except Exception:
            # Losing the watch loses only early notice of changes: calls still
            # work, and the next start re-reads the list.
            return

    async def ensure_started(self) -> Client:
        """The connected client, starting (or restarting) the server if needed."""
        async with self._lock:
            if self.state == "running" and self.client is not None:
                return self.client
            if self.state == "failed":
                wait = self.next_attempt - time.monotonic()
                if wait > 0:
                    raise ServerUnavailable(f"{self.reason}\nThe next restart is attempted in {wait:.0f} s.")
            await self._start()
            assert self.client is not None
            return self.client

    async def _start(self) -> None:
        await self._reap()
        self.pending_sign_in = None
        self.state = "starting"
        self.starts += 1
        self._stopping = False
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stop = anyio.Event()
        self._stop = stop
        self._task = asyncio.create_task(self._run(ready, stop), name=f"mcp-server-{self.name}")
        timeout = self.spec.config.startup_timeout_s
        # The first connect is the slow one a person waits through (at a terminal, it says so).
        shown = progress(f"Starting MCP server {self.name}") if self.starts == 1 else nullcontext()
        try:
            with shown:
                await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self._reap(cancel=True)
            if ready.done() and not ready.cancelled():
                ready.exception()  # failed as the wait ended: read, so asyncio does not report it at exit
            self._fail(self._with_stderr(f"MCP server {self.name!r} did not start within {timeout:g} s"))
            raise ServerUnavailable(self.reason) from None
        except Exception as exc:
            await self._reap(cancel=True)
            sign_in = _sign_in_error(exc, self.name)
            if sign_in is not None:
                self._fail(str(sign_in))
                self.next_attempt = 0.0  # a sign-in, not a crash: no back-off once it is done
                raise sign_in from None
            self._fail(self._with_stderr(f"MCP server {self.name!r} failed to start: {describe_exception(exc)}"))
            raise ServerUnavailable(self.reason) from None
        self.state = "running"
        self.reason = None

    async def _reap(self, cancel: bool = False) -> None:
        """Wait for the server task to finish (it stops its process on the way out)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stopping = True
        if self._stop is not None:
            self._stop.set()
        if cancel:
            task.cancel()
        try:
            await asyncio.wait_for(task, STOP_TIMEOUT_S)
        except (TimeoutError, asyncio.CancelledError, Exception):
            pass

    async def stop(self) -> None:
        """Stop the server; does not wait for a start in progress to finish first
        (cancelling it is what stops it), so closing a session is never slow."""
        self._stopping = True
        await self._reap(cancel=True)
        self.state = "stopped"
        self.client = None
        if self._own_log_dir is not None:
            import shutil

            shutil.rmtree(self._own_log_dir, ignore_errors=True)
            self._own_log_dir = self._log_dir = None

    # --- calls -------------------------------------------------------------

    async def _broken(self, exc: BaseException) -> ServerUnavailable:
        """The server went away under a call: mark it failed, return the error to raise."""
        # The server task notices the closed pipe by itself; give it a moment
        # so the reason carries the exit status and stderr.
        if self._task is not None:
            with suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 2.0)
        if self.pending_sign_in is not None:
            return self.pending_sign_in
        sign_in = _sign_in_error(exc, self.name)
        if sign_in is not None:
            return sign_in
        if self.state != "failed":
            await self._reap(cancel=True)
            self._fail(self._with_stderr(f"lost the connection to MCP server {self.name!r}: "
                                         f"{describe_exception(exc)}"))
        return ServerUnavailable(self.reason or describe_exception(exc))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float | None = None,
        progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    ) -> types.CallToolResult:
        client = await self.ensure_started()
        timeout = timeout if timeout is not None else self.spec.config.tool_timeout_s
        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=timeout,
                                            progress_callback=progress)  # type: ignore[arg-type]
        except MCPError as exc:
            sign_in = _sign_in_error(exc, self.name)
            if sign_in is not None:
                raise sign_in from None
            if exc.error.code == REQUEST_TIMEOUT:
                raise ToolCallTimeout(f"{name} on MCP server {self.name!r} gave no answer within {timeout:g} s") \
                    from None
            if exc.error.code == CONNECTION_CLOSED or self._connection_gone():
                raise await self._broken(exc) from None
            raise
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
            raise await self._broken(exc) from None
        except Exception as exc:
            sign_in = _sign_in_error(exc, self.name)
            if sign_in is not None:
                raise sign_in from None
            if type(exc).__module__.startswith("httpx2"):
                raise await self._broken(exc) from None
            raise
        self.failures = 0
        return result

    def _connection_gone(self) -> bool:
        return self.process.closed.is_set() or self.state != "running" or self.client is None

    async def _request(self, fn: Callable[[Client], Any]) -> Any:
        client = await self.ensure_started()
        try:
            return await fn(client)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED or self._connection_gone():
                raise await self._broken(exc) from None
            raise
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
            raise await self._broken(exc) from None

    async def _all_resource_pages(self, method: str, field: str) -> list[Any]:
        """Every page of ``resources/list`` or ``resources/templates/list``
        (none from a server without resources)."""
        caps = (await self.ensure_started()).server_capabilities
        if caps.resources is None:
            return []

        async def go(client: Client) -> list[Any]:
            out: list[Any] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page = await getattr(client, method)(cursor=cursor)
                out.extend(getattr(page, field))
                cursor = page.next_cursor
                if not cursor:
                    break
            return out

        return await self._request(go)

    async def list_resources(self) -> list[types.Resource]:
        return await self._all_resource_pages("list_resources", "resources")

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return await self._all_resource_pages("list_resource_templates", "resource_templates")

    async def list_prompts(self) -> list[types.Prompt]:
        caps = (await self.ensure_started()).server_capabilities
        if caps.prompts is None:
            return []
        return (await self._request(lambda c: c.list_prompts())).prompts

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        return await self._request(lambda c: c.get_prompt(name, arguments))

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._request(lambda c: c.read_resource(uri))


async def _list_all_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


@asynccontextmanager
async def _closing(inner: AbstractAsyncContextManager[Any], handle: Any) -> Any:
    try:
        async with inner as streams:
            yield streams
    finally:
        handle.close()


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str], auth: Any = None) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams

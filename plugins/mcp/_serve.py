"""``pegboard serve``: pegboard's tools offered to an MCP client.

Built on the low-level ``mcp.server.Server`` so that pegboard's own schemas
and descriptions pass through untouched, and every call runs through the
whole pipeline (``Session.call``: validation, permissions, hooks, shaping).

Asking the user: a call whose decision is *ask* reaches ``pegboard_ask`` on
the host object registered here, which puts the question to the MCP
client's user by form elicitation, in whichever way the connection's
protocol era allows:

* handshake era (2025-11-25 and older): an ``elicitation/create`` request
  sent while the call waits;
* 2026-07-28: servers send no requests, so the call ends with an
  ``InputRequiredResult`` carrying the question; the client asks, then
  retries the call with the answer, and the retry is decided with it.

A tool's own form (``pegboard_elicit``: AskUserQuestion's questions, an MCP
server behind pegboard asking) goes the same two ways. In 2026-07-28 it is an
input request of the call too, so the tool runs again on the retry and finds
the answer: only a read-only tool's form goes that way (running it twice
changes nothing); another tool's form is declined. Answers of earlier rounds
ride in the request state, as the client sends back only the last round's.

A client that cannot elicit gets a deny that names the rule that would
allow the call.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import json
import os
import signal
import sys
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from pegboard import (Answer, Client, Decision, ImageContent, PermissionRequest, ResourceContent, TextContent,
                      ToolResult, hookimpl)
from pegboard.paths import config_dir

__all__ = ["AskingHost", "SessionRegistry", "build_server", "parse_address", "run_serve", "to_call_result"]

INPUT_KEY = "pegboard_permission"
FORM_KEY = "pegboard_form:"
CHOICES = ("allow", "allow_session", "deny")
_INPUT_CLIP = 1_500


# --- the question --------------------------------------------------------------


def _question(request: PermissionRequest, decision: Decision, remember: bool) -> tuple[str, dict[str, Any]]:
    args = json.dumps(dict(request.input), ensure_ascii=False, default=str)
    if len(args) > _INPUT_CLIP:
        args = args[:_INPUT_CLIP] + "…"
    rule = decision.suggestions[0] if decision.suggestions else request.tool.name
    message = f"pegboard asks before running {request.tool.name}: {decision.reason}.\nArguments: {args}"
    choices = list(CHOICES) if remember else ["allow", "deny"]
    described = "allow: this call only; deny: do not run it"
    if remember:
        message += f"\n'allow_session' also allows {rule} for the rest of this session."
        described = "allow: this call only; allow_session: calls like it until the session ends; deny: do not run it"
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "title": f"Run {request.tool.name}?", "enum": choices,
                       "description": described},
        },
        "required": ["answer"],
    }
    return message, schema


def _digest(message: str) -> str:
    # Binds an answer to the question it answered: a retry with other
    # arguments is a new question, not a reuse of an old yes.
    return base64.urlsafe_b64encode(hashlib.sha256(message.encode()).digest()[:12]).decode()


def _answer_from(result: types.ElicitResult | None, decision: Decision, remember: bool) -> Answer:
    if result is None or result.action != "accept":
        why = "declined" if result is not None and result.action == "decline" else "dismissed"
        return Answer(allow=False, message=f"The user {why} this call ({decision.reason}). "
                                           "Do not retry it unchanged; ask the user how to proceed.")
    choice = (result.content or {}).get("answer")
    if choice == "allow":
        return Answer(allow=True)
    if choice == "allow_session" and remember:
        return Answer(allow=True, remember="session")
    return Answer(allow=False, message=f"The user denied this call ({decision.reason}).")


@dataclass
class _CallState:
    """What one tools/call carries into pegboard_ask (through a context variable)."""

    ctx: ServerRequestContext[Any, Any]
    modern: bool
    can_elicit: bool
    tool_read_only: bool
    # Whether an answer may be remembered for the session: not when the
    # session is shared by clients we cannot tell apart (2026-07-28 over HTTP).
    remember: bool
    responses: dict[str, Any] = field(default_factory=dict)
    asked_digest: str | None = None
    pending: tuple[str, dict[str, Any], str] | None = None
    pending_form: tuple[str, str, dict[str, Any]] | None = None
    """2026-07-28: a tool's form to send as this round's input request (key, message, schema)."""
    progress: float = 0.0
    held: str | None = None
    """The pending call this call became (``approvals = "approvers"``), to wait on."""


_current: contextvars.ContextVar[_CallState | None] = contextvars.ContextVar("pegboard_mcp_call", default=None)


class AskingHost:
    """The host side of ``pegboard serve``: asks through the MCP client."""

    def __init__(self, toolbox: Any, *, approvers: bool = False) -> None:
        self.toolbox = toolbox
        # approvals = "approvers": an ask waits as a pending call for the people holding an
        # approver credential (the approvals page, `pegboard approvals`), not the MCP client.
        self.approvers = approvers

    def _cannot_ask(self, request: PermissionRequest, decision: Decision, why: str) -> Answer:
        """The result the model reads when nobody could be asked: what happened,
        what to do now (not retry, not touch pegboard's settings, carry on or
        tell the user), and for the person it reports to, the one change that
        would allow calls like it, in a file whose allow rules apply."""
        rule = decision.suggestions[0] if decision.suggestions else request.tool.name
        settings = self.toolbox.settings
        if settings.trusted:
            where = f"[permissions] allow in {settings.root / '.pegboard' / 'config.toml'} or {config_dir() / 'config.toml'}"
        else:
            # An untrusted project's allow rules are ignored: pointing there would mislead.
            where = f"[permissions] allow in {config_dir() / 'config.toml'}"
        return Answer(allow=False, asked=False, message=(
            f"{request.tool.name} was not run: it needs the user's approval ({decision.reason}) and {why}, "
            "so nobody could approve it; nothing was done. Do not retry this call unchanged and do not edit "
            "pegboard's settings yourself. Continue with what you can do without it, or tell the user what you "
            f"wanted to run and why: they can allow calls like it by adding {rule!r} to {where}, "
            "or by restarting pegboard serve with a --mode that allows it."))

    @hookimpl
    async def pegboard_ask(self, request: PermissionRequest, decision: Decision) -> Answer:
        call = _current.get()
        if self.approvers and request.session.durable:
            return Answer.later()
        if call is None:
            return self._cannot_ask(request, decision, "no MCP client is connected")
        if not call.can_elicit:
            return self._cannot_ask(request, decision, "the MCP client cannot ask its user (no form elicitation)")
        message, schema = _question(request, decision, call.remember)
        digest = _digest(message)
        if call.modern:
            raw = call.responses.get(INPUT_KEY)
            if raw is not None and call.asked_digest == digest:
                result = types.ElicitResult.model_validate(raw) if not isinstance(raw, types.ElicitResult) else raw
                return _answer_from(result, decision, call.remember)
            # No answer yet: end this round with the question (see module doc).
            call.pending = (message, schema, digest)
            return Answer(allow=False, message="waiting for the user's answer")
        try:
            result = await call.ctx.session.elicit_form(message, schema, related_request_id=call.ctx.request_id)
        except Exception as exc:
            return self._cannot_ask(request, decision, f"asking the MCP client failed ({exc})")
        return _answer_from(result, decision, call.remember)

    @hookimpl
    async def pegboard_elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """A tool's form (an MCP server behind pegboard asking), passed on to
        the MCP client's user where the connection lets servers ask."""
        call = _current.get()
        if call is None or not call.can_elicit:
            return {"action": "decline"}
        if call.modern:
            return self._form_by_input_request(call, f"{source} asks: {message}", schema)
        try:
            result = await call.ctx.session.elicit_form(f"{source} asks: {message}", schema,
                                                        related_request_id=call.ctx.request_id)
        except Exception:
            return {"action": "decline"}
        return {"action": result.action, "content": result.content or {}}

    @staticmethod
    def _form_by_input_request(call: _CallState, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """2026-07-28: the answer the client gave to this form in an earlier
        round, else a decline for now, with the form kept to end this round
        with (see module doc); only for a read-only tool."""
        if not call.tool_read_only:
            return {"action": "decline"}
        key = FORM_KEY + _digest(json.dumps([message, schema], sort_keys=True, default=str))
        raw = call.responses.get(key)
        if raw is not None:
            result = raw if isinstance(raw, types.ElicitResult) else types.ElicitResult.model_validate(raw)
            return {"action": result.action, "content": result.content or {}}
        if call.pending_form is None:
            call.pending_form = (key, message, schema)
        return {"action": "decline"}

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        """A running call's output lines (Bash's ``bash.line``) and progress become progress
        notifications on that call (the client's progress token decides
        whether they are sent)."""
        call = _current.get()
        if call is None:
            return
        if kind == "approval.pending":
            call.held = str(data.get("id"))
            return
        message: str | None = None
        total: float | None = None
        if kind == "bash.line":
            call.progress += 1
            message = str(data.get("line", ""))[:1_000]
        elif kind == "progress":
            call.progress = float(data.get("progress") or call.progress + 1)
            total = data.get("total")
            message = data.get("message")
        else:
            return
        import asyncio

        with suppress(RuntimeError):
            asyncio.get_running_loop().create_task(call.ctx.session.report_progress(call.progress, total, message))


# --- results -------------------------------------------------------------------


def to_call_result(result: ToolResult) -> types.CallToolResult:
    blocks: list[Any] = []
    for c in result.content:
        notes = types.Annotations.model_validate(c.annotations) if c.annotations else None
        if isinstance(c, TextContent):
            blocks.append(types.TextContent(type="text", text=c.text, annotations=notes))
        elif isinstance(c, ImageContent):
            blocks.append(types.ImageContent(type="image", data=c.data, mime_type=c.mime_type, annotations=notes))
        elif isinstance(c, ResourceContent):
            if c.blob is not None:
                res: Any = types.BlobResourceContents(uri=c.uri, mime_type=c.mime_type, blob=c.blob)
            else:
                res = types.TextResourceContents(uri=c.uri, mime_type=c.mime_type, text=c.text or "")
            blocks.append(types.EmbeddedResource(type="resource", resource=res, annotations=notes))
    # pegboard's tools declare no output schema, and clients that prefer
    # structured content (Claude Code) would show it in place of the text:
    # Bash's {"exit_code": 0, ...} instead of the command's output. The text
    # is the result; the structured data rides along in _meta.
    meta = {"pegboard/structured": result.structured_content} if result.structured_content else None
    return types.CallToolResult(content=blocks, is_error=result.is_error, _meta=meta)


# --- sessions ------------------------------------------------------------------


class SessionRegistry:
    """One pegboard Session per MCP connection, or per signed-in client.

    stdio is one connection for the life of the process. Over HTTP a
    handshake-era client has a session id, and its Session closes with it;
    2026-07-28 requests (and every request of a stateless server) carry no
    connection, so each signed-in client has one Session for all of them.

    ``durable``: the Sessions live in the store, under an id made from the
    client (or the MCP session), so that any replica sharing the store
    carries on the same session, and pending calls can wait there.
    ``stateless``: other replicas may have changed a Session since this one
    last saw it, so its record is read again at each call.
    """

    def __init__(self, toolbox: Any, mode: str | None, *, single_connection: bool, durable: bool = False,
                 stateless: bool = False) -> None:
        self.toolbox = toolbox
        self.mode = mode
        # stdio: the session without an id *is* the one connection.
        self.single_connection = single_connection
        self.durable = durable
        self.stateless = stateless
        self.sessions: dict[str | None, Any] = {}
        # logging/setLevel from a handshake-era client: the level is kept (and checked), but
        # pegboard serve sends no log messages of its own yet, at any level.
        self.log_level = "info"
        self.team: Any = None
        """``_serve_team.Team`` when calls wait for approvers in the store."""
        self.log: Any = None

    @staticmethod
    def _key(ctx: ServerRequestContext[Any, Any]) -> str | None:
        connection = getattr(ctx.session, "_connection", None)  # the SDK keeps it private
        return getattr(connection, "session_id", None)

    @staticmethod
    def client(ctx: ServerRequestContext[Any, Any]) -> Client | None:
        """Who signed in for this request (None: stdio, where the one client is the host's own)."""
        from ._serve_http import CLIENT_KEY

        request = ctx.request
        scope = getattr(request, "scope", None)
        return scope.get(CLIENT_KEY) if isinstance(scope, dict) else None

    def private(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether the Session serving ``ctx`` belongs to one client only."""
        return self.single_connection or self._key(ctx) is not None

    def get(self, ctx: ServerRequestContext[Any, Any]) -> Any:
        connection = getattr(ctx.session, "_connection", None)
        mcp_session = self._key(ctx)
        client = self.client(ctx)
        # The whole client, not its id alone: two keys of one name with different levels must not
        # share a session (the wider one's policy would serve the narrower one's calls).
        key = f"mcp-session:{mcp_session}" if mcp_session is not None else \
            f"client:{client_key(client)}" if client is not None else None
        session = self.sessions.get(key)
        if session is None:
            from ._serve_team import serve_session_id

            durable_id = serve_session_id(key or "stdio") if self.durable else None
            session = self.toolbox.session(self.mode, session_id=durable_id, client=client)
            self.sessions[key] = session
            if mcp_session is not None and connection is not None:
                async def close() -> None:
                    self.sessions.pop(key, None)
                    await session.aclose()

                connection.exit_stack.push_async_callback(close)
        return session

    async def fresh(self, ctx: ServerRequestContext[Any, Any]) -> Any:
        """``get``, with a stateless server's session record read again (its
        scratchpad may have been written through another replica)."""
        session = self.get(ctx)
        if self.stateless and session.durable:
            await anyio.to_thread.run_sync(self.toolbox.make_durable, session, session.id, None)
        return session

    async def aclose(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.aclose()


def client_key(client: Client) -> str:
    """Everything that decides what a client's session may do, as one string."""
    return json.dumps([client.id, client.via, client.level, sorted(client.scopes)])


def _listing(toolbox: Any, session: Any) -> list[types.Tool]:
    """tools/list for ``session``. ``toolbox`` is the one serve made and
    serves (serve is the host here), asked for descriptions and broken tools
    through its public methods rather than reached through the session."""
    out = []
    for tool in session.offered():
        if tool.name == "ToolSearch":
            continue  # every tool is listed with its schema: nothing to search for
        if toolbox.tool_problem(tool) is not None:
            continue  # its schema cannot be built: that tool is left out, never the listing
        out.append(types.Tool(
            name=tool.name,
            description=toolbox.description(tool),
            input_schema=tool.schema,
            title=tool.title,
            annotations=types.ToolAnnotations(read_only_hint=tool.read_only, title=tool.title),
        ))
    return out


def build_server(toolbox: Any, registry: SessionRegistry) -> Server[Any]:
    async def on_list_tools(ctx: ServerRequestContext[Any, Any],
                            params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        session = registry.get(ctx)
        caps = ctx.session.client_capabilities
        forms = caps.elicitation if caps is not None else None
        # A tool's own form (Session.elicit) reaches a client that elicits: in 2026-07-28 as an
        # input request of the call (a read-only tool's; see AskingHost.pegboard_elicit).
        session.can_ask = forms is not None and (forms.form is not None or forms.url is None)
        return types.ListToolsResult(tools=_listing(registry.toolbox, session))

    async def on_call_tool(ctx: ServerRequestContext[Any, Any],
                           params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
        started = time.monotonic()
        session = await registry.fresh(ctx)
        arguments = dict(params.arguments or {})
        team = registry.team
        if team is not None and session.durable:
            # The same call asked again (a retry through another replica) takes over its pending call.
            taken = await team.take_over(session, params.name, arguments)
            if taken is not None:
                result = await team.wait(session, taken, _progress(ctx))
                _log_call(registry, session, params.name, result, started, taken)
                return to_call_result(result)
        caps = ctx.session.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        can_elicit = elicitation is not None and (elicitation.form is not None or elicitation.url is None)
        modern = ctx.protocol_version >= "2026-07-28"
        session.can_ask = can_elicit  # as pegboard_elicit below can pass a form on
        tool = registry.toolbox.tools.get(params.name)
        asked_digest, earlier = _decode_state(params.request_state)
        state = _CallState(ctx=ctx, modern=modern, can_elicit=can_elicit,
                           tool_read_only=bool(tool is not None and tool.read_only), remember=registry.private(ctx),
                           responses={**earlier, **dict(params.input_responses or {})}, asked_digest=asked_digest)
        token = _current.set(state)
        try:
            result = await session.call(params.name, arguments)
        finally:
            _current.reset(token)
        if state.held is not None and team is not None:
            await team.hold(session, state.held)
            result = await team.wait(session, state.held, _progress(ctx))
        elif state.pending is not None or state.pending_form is not None:
            return _input_required(state)
        _log_call(registry, session, params.name, result, started, state.held)
        return to_call_result(result)

    import warnings

    from ._serve_extras import extra_handlers

    with warnings.catch_warnings():
        # logging/setLevel is deprecated in 2026-07-28 but handshake-era clients still send it.
        warnings.simplefilter("ignore", UserWarning)
        return Server("pegboard", version=_version(), on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                      instructions="pegboard's tools; calls that need approval are asked through your client.",
                      **extra_handlers(toolbox, registry))


def _progress(ctx: ServerRequestContext[Any, Any]) -> Any:
    """A progress line on this request (when the client asked for progress)."""

    async def say(message: str) -> None:
        with suppress(Exception):
            await ctx.session.report_progress(0, None, message)

    return say


def _log_call(registry: SessionRegistry, session: Any, tool: str, result: ToolResult, started: float,
              pending: str | None) -> None:
    if registry.log is None:
        return
    client = session.client
    registry.log.event("call", tool=tool, client=client.id if client else None, session=session.id,
                       is_error=result.is_error, ms=round((time.monotonic() - started) * 1000, 1), pending=pending)


def _input_required(state: _CallState) -> types.InputRequiredResult:
    """This round's question (the permission ask first, else a tool's form),
    with what was answered so far in the request state: the client sends back
    only the last round's answers."""
    if state.pending is not None:
        message, schema, digest = state.pending
        key = INPUT_KEY
        answered = {k: v for k, v in state.responses.items() if k.startswith(FORM_KEY)}
    else:
        assert state.pending_form is not None
        key, message, schema = state.pending_form
        digest = state.asked_digest or ""
        answered = dict(state.responses)
    request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
    kept = {k: v.model_dump(mode="json", by_alias=True) if isinstance(v, types.ElicitResult) else v
            for k, v in answered.items()}
    return types.InputRequiredResult(input_requests={key: request},
                                     request_state=json.dumps({"q": digest, "answered": kept}))


def _decode_state(state: str | None) -> tuple[str | None, dict[str, Any]]:
    """The digest of the permission question asked, and earlier rounds' answers."""
    if not state:
        return None, {}
    try:
        decoded = json.loads(state)
        value, answered = decoded.get("q"), decoded.get("answered")
    except (ValueError, AttributeError):
        return None, {}
    kept = {k: v for k, v in answered.items() if isinstance(k, str) and isinstance(v, dict)} \
        if isinstance(answered, dict) else {}
    return (value if isinstance(value, str) and value else None), kept


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pegboard")
    except PackageNotFoundError:
        return "0"


# --- running -------------------------------------------------------------------


def parse_address(text: str, allow_remote: bool) -> tuple[str, int]:
    import click

    from ._serve_http import is_loopback

    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r}: expected HOST:PORT, e.g. 127.0.0.1:8765", param_hint="--http")
    host = host.strip("[]") or "127.0.0.1"
    if not is_loopback(host) and not allow_remote:
        raise click.BadParameter(
            f"{host} is not a loopback address: anyone who reaches it could run tools on this machine. "
            "Add --allow-remote if that is what you want.", param_hint="--http")
    return host, int(port)


async def serve_stdio(toolbox: Any, mode: str | None, wire: tuple[BinaryIO, BinaryIO]) -> None:
    """``wire``: the real stdin and stdout, claimed by the command before the
    toolbox loaded (``claim_stdio``)."""
    from ._serve_stdio import stdio_streams

    registry = SessionRegistry(toolbox, mode, single_connection=True)
    server = build_server(toolbox, registry)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, registry)
            async with stdio_streams(*wire) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await registry.aclose()


async def _stop_on_signal(registry: SessionRegistry) -> None:
    """A client that stops us with a signal instead of closing stdin must
    still get its MCP servers (and their children) stopped.

    Cancelling the server is not enough: the SDK reads stdin in a worker
    thread that no cancellation can interrupt, so after closing every
    session we leave at once."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP, signal.SIGINT) as signals:
        async for signum in signals:
            with anyio.CancelScope(shield=True):
                await registry.aclose()
            sys.stdout.flush()
            os._exit(128 + signum)


async def serve_http(toolbox: Any, mode: str | None, plan: Any, sock: Any, token: str | None, team_plan: Any) -> None:
    """``plan``: the checked options (``_serve_http.HttpPlan``); ``sock``: bound
    already; ``token``: the start token (None: ``--no-auth``); ``team_plan``:
    ``[plugins.mcp.serve]`` and what it needs (``TeamPlan``)."""
    import uvicorn

    from ._serve_app import Readiness, build_app
    from ._serve_credentials import Credentials, local_user

    serve, log = team_plan.config, team_plan.log
    port = sock.getsockname()[1]
    address = f"{plan.scheme}://{_url_host(plan.host)}:{port}/mcp"
    durable = serve.stateless or serve.approvals == "approvers"
    registry = SessionRegistry(toolbox, mode, single_connection=False, durable=durable, stateless=serve.stateless)
    registry.log = log
    oauth = None
    if serve.oauth is not None:
        from ._serve_oauth import OAuthVerifier

        oauth = OAuthVerifier(serve.oauth, audience=serve.url)
    credentials = Credentials(token=token, owner=local_user(), keys=team_plan.store if serve.api_keys else None,
                              oauth=oauth)
    team = None
    stores: list[Any] = []
    if durable or serve.api_keys:
        stores = [team_plan.store]
    if serve.approvals == "approvers":
        from ._serve_team import Team

        team = Team(toolbox, team_plan.store, log, address=address, approval_timeout_s=serve.approval_timeout_s,
                    replica_timeout_s=team_plan.replica_timeout_s)
        log.replica = team.id
        registry.team = team
    page = None
    if team is not None:
        from ._serve_approvals import TeamApprovals, shared_secret
        from ._serve_http import host_checks

        checks = host_checks(plan.host, port, plan.scheme, plan.allow_remote)
        keys = [await anyio.to_thread.run_sync(shared_secret, team_plan.store, name) for name in ("cookie", "csrf")]
        page = TeamApprovals(toolbox, credentials, team_plan.store, log,
                             hosts=frozenset(checks.allowed_hosts) if checks.enable_dns_rebinding_protection else None,
                             secure=plan.tls is not None or (serve.url or "").startswith("https://"),
                             cookie_key=keys[0], csrf_key=keys[1], origins=_origins(serve.url))
    server = build_server(toolbox, registry)
    app = build_app(server, plan=plan, port=port, credentials=credentials, log=log, serve=serve,
                    readiness=Readiness(stores, team), replica=team.id if team else None, stateless=serve.stateless,
                    approvals=page)
    certfile, keyfile = plan.tls or (None, None)
    # A call waiting for an approver would hold a stop for as long as it waits: requests still
    # running after this are cut off (their calls left to whoever asks again).
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ssl_certfile=certfile, ssl_keyfile=keyfile,
                            timeout_graceful_shutdown=5)
    log.event("serving", url=address, sign_in=credentials.methods or ["none"], stateless=serve.stateless,
              approvals=serve.approvals, durable=durable)
    try:
        async with anyio.create_task_group() as tg:
            if team is not None:
                await team.join()
                tg.start_soon(team.run)
            await uvicorn.Server(config).serve(sockets=[sock])  # uvicorn turns SIGTERM/SIGINT into a clean shutdown
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if team is not None:
                await team.leave()
            await registry.aclose()


def _origins(url: str | None) -> frozenset[str]:
    """The origin of ``[plugins.mcp.serve] url``: where people open the approvals page behind a proxy."""
    if not url:
        return frozenset()
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return frozenset({f"{parts.scheme}://{parts.netloc}"})


@dataclass
class TeamPlan:
    """``[plugins.mcp.serve]`` for one run, with the stores and the log it works with."""

    config: Any
    store: Any
    """The plugin's store (keys, replicas, waiting calls), in the database the core's tables share."""
    log: Any
    replica_timeout_s: float = 15.0


def run_serve(toolbox: Any, *, mode: str | None, wire: tuple[BinaryIO, BinaryIO] | None = None,
              http: Any = None, data_folder: Any = None, team_plan: TeamPlan | None = None) -> None:
    """Stdio over ``wire`` (claimed by the command), or HTTP as ``http`` (an
    ``HttpPlan``) says; ``data_folder``: the plugin's own, for a generated token;
    ``team_plan``: the serve settings (HTTP)."""
    from pegboard import ConfigError
    from pegboard.cli import fail_config

    approvers = http is not None and team_plan is not None and team_plan.config.approvals == "approvers"
    toolbox.add_host(AskingHost(toolbox, approvers=approvers), name="mcp-serve")
    try:
        # A disabled mode fails here, before any client connects.
        session = toolbox.session(mode)
    except ConfigError as exc:
        fail_config(exc)
        return
    anyio.run(session.aclose)
    if http is None:
        assert wire is not None
        anyio.run(serve_stdio, toolbox, mode, wire)
        return
    assert team_plan is not None
    from ._serve_http import forget_token, listen, prepare_token

    log = team_plan.log
    sock = listen(http.host, http.port)
    port = sock.getsockname()[1]
    url = f"{http.scheme}://{_url_host(http.host)}:{port}/mcp"
    written = None
    token: str | None = None
    # uvicorn stops cleanly on SIGTERM/SIGINT, then raises the signal again
    # once its own handlers are gone: with the default handler back, the
    # process would die before closing its sessions (and their MCP servers)
    # and removing the token file. This handler takes it instead (and a
    # signal that comes before uvicorn listens), unwinds to here, and the
    # signal is raised again once everything is closed.
    caught: list[int] = []

    def stopping(signum: int, frame: Any) -> None:
        if caught:  # a second signal while closing: stop now
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
        caught.append(signum)
        raise _Stopped

    previous = {sig: signal.signal(sig, stopping) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if http.no_auth:
            log.say(f"WARNING: --no-auth: {url} asks no credential. Any process on this machine, run by any "
                    "user, can call pegboard's tools as you and answer their questions. Use it only in a "
                    "single-user test setting.", event="no_auth", level="warning")
            log.say(f"serving MCP at {url}", event="listening", url=url)
        else:
            token, line, written = prepare_token(http.tokens, data_folder, http.host, port)
            log.say(f"serving MCP at {url}", event="listening", url=url)
            log.say(line, event="token", where=str(written or http.tokens.file or f"${http.tokens.env}"))
        anyio.run(serve_http, toolbox, mode, http, sock, token, team_plan)
    except* _Stopped:  # raised in serve_http's task group too, where it arrives in a group
        pass
    finally:
        sock.close()
        if token is not None:
            forget_token(written, token)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        signal.signal(caught[0], signal.SIG_DFL)
        signal.raise_signal(caught[0])


class _Stopped(Exception):
    """A stop signal, unwinding serve --http to its clean-up."""


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host

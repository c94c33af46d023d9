"""The approvals page (``pegboard approvals serve``): a person answers the
calls that wait for approval and reads the audit log, in a browser.

The page is a small ASGI application whose only shared state is the store:
what waits, what was answered and what was decided are read from it at each
request, and an answer is written to it through ``Toolbox.answer_pending``,
the same code ``pegboard approvals approve|deny`` runs (bound to the digest
of the call's tool and input the person was shown; each call answered once).
So several copies of it can serve one store, and who may use it is one
function (``identify``): ``TokenGate`` here, a sign-in in a team's server.

What stands between the port and the answers:

* **Who is asking.** ``identify(request)`` names the approver (kept with each
  answer) or refuses the request (403), whatever its path or method.
  ``TokenGate`` lets in the requests that carry the token of the address
  ``pegboard approvals serve`` printed (compared in constant time), and
  every link and form of the page carries it on.
* **The Host header** is one of the names of the loopback address and port
  the page listens on (a web page whose name was made to point at 127.0.0.1
  does not reach it).
* **Forms** carry a CSRF token (an HMAC of the approver's name under a secret
  of the server's), and a POST whose ``Origin`` or ``Sec-Fetch-Site`` says it
  came from another site is refused.
* **Headers**: a content security policy that runs only the page's own
  script and style (a nonce per response), no framing, no referrer to another
  site (the address holds the token), no cache.

Updates: the page listens to server-sent events (``/events``); the stream
polls the store and says ``change`` when what the page shows changed, and
the page's script fetches the page again and merges it in (a message being
typed in a call's form is kept). Without the script, the forms still work.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import re
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from .._services.audit import newest_id, preview, recorded
from .._api.calls import PendingCall
from .._services.pending import AlreadyAnswered, ChangedSinceShown, list_pending, local_user, recently_answered
from .._util.redact import redact
from .._api.decisions import Answer
from .._services.store import CORE_COMPONENT
from .._services.tables import sessions

if TYPE_CHECKING:
    from .._engine.toolbox import Toolbox

__all__ = ["ApprovalsPage", "Approver", "PageRequest", "TokenGate", "loopback_hosts"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 16 * 1024            # a form: an id, a digest, a choice and a message
MAX_MESSAGE = 2000              # what the model is told when a call is denied
PREVIEW_CHARS = 2000            # a waiting call's input, redacted
WAITING_LIMIT = 200             # calls shown; more wait behind them
ANSWERED_LIMIT = 20
DECISIONS_LIMIT = 50
POLL_S = 1.0                    # how often an event stream looks at the store
KEEPALIVE_S = 15.0
STREAM_MAX_S = 600.0            # a stream ends after this; the browser opens another
MAX_STREAMS = 16
SINCE = {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0, "all": None}
SINCE_LABELS = {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days", "30d": "last 30 days",
                "all": "any time"}
DECISIONS = {"allow": "allowed", "deny": "denied", "ask": "waited for a person"}
SCOPES = {"project": "for the session's project", "user": "for you, in every project",
          "session": "for this session"}
_PENDING_ID = re.compile(r"p-[0-9a-f]{1,40}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Approver:
    """Who is using the page, as ``identify`` found them."""

    name: str
    """Kept with each answer (``Answer.approver``) and in the audit log."""
    clients: frozenset[str] | None = None
    """The requesters whose calls they see and answer (None: everyone's)."""
    carry: str = ""
    """A query string every link and form of the page carries (``token=...``), or ""."""
    remember: tuple[str, ...] = ("project", "user", "session")
    """Where this approver may keep an "approve always" rule (``SCOPES``' keys); empty: approve
    once or deny only (a team's server, where the rules are the operator's config)."""


class PageRequest:
    """One HTTP request as the page and ``identify`` see it."""

    def __init__(self, scope: Scope):
        self.method: str = scope["method"]
        """``GET``, ``POST``, ..."""
        self.path: str = scope["path"]
        """The path, below where the page is served (``/``, ``/events``, ``/answer``)."""
        self.scheme: str = scope.get("scheme", "http")
        """``http`` or ``https``, as the server sees it."""
        self.query: dict[str, str] = {}
        """The query's parameters (the first of a repeated one)."""
        for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
            self.query.setdefault(key, value)  # the first of a repeated parameter
        self.headers: dict[str, list[str]] = {}
        """Every header's values, by lower-case name."""
        for key, value in scope.get("headers", []):
            self.headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))

    def header(self, name: str) -> str | None:
        """The header's value; None when absent or sent more than once."""
        values = self.headers.get(name, [])
        return values[0] if len(values) == 1 else None


class TokenGate:
    """``identify`` for one person on this machine: a request carrying
    ``token`` (the query parameter) is the local user's."""

    def __init__(self, token: str, name: str):
        self._token = token.encode()
        self._approver = Approver(name=name, carry=urlencode({"token": token}))

    def __call__(self, request: PageRequest) -> Approver | None:
        given = request.query.get("token", "").encode("utf-8", "surrogateescape")
        return self._approver if hmac.compare_digest(given, self._token) else None


def loopback_hosts(port: int) -> frozenset[str]:
    """The Host headers a browser on this machine sends for 127.0.0.1:port."""
    return frozenset(f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]"))


class _Refused(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status
        self.text = text


class ApprovalsPage:
    """The ASGI application. ``identify`` names the approver of a request or
    refuses it (None); ``secret`` signs the forms' CSRF tokens (the same for
    every copy serving one store); ``hosts``: the Host headers accepted
    (None: any, for a server behind a proxy that checks them); ``origins``:
    the origins a form may be posted from besides the page's own as the
    server sees it (the public ``https://`` address of a proxy that
    terminates TLS in front of it)."""

    def __init__(self, toolbox: Toolbox, identify: Callable[[PageRequest], Approver | None], *,
                 secret: bytes | None = None, hosts: frozenset[str] | None = None, poll_s: float = POLL_S,
                 origins: frozenset[str] = frozenset()):
        self.toolbox = toolbox
        """The toolbox whose store the page reads and answers in."""
        self.identify = identify
        """The approver of a request, or None to refuse it (403)."""
        self._secret = secret or secrets.token_bytes(32)
        self.hosts = hosts
        """The Host headers accepted (None: any)."""
        self.origins = origins
        """Origins a form may be posted from besides the page's own."""
        self.poll_s = poll_s
        """How often an open page's event stream looks at the store, in seconds."""
        self._streams = 0

    # --- ASGI ----------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        request = PageRequest(scope)
        try:
            approver = self._admit(request)
            if request.path == "/" and request.method == "GET":
                await self._page(request, approver, send)
            elif request.path == "/events" and request.method == "GET":
                await self._events(request, approver, receive, send)
            elif request.path == "/answer" and request.method == "POST":
                await self._answer(request, approver, receive, send)
            elif request.path in ("/", "/events", "/answer"):
                raise _Refused(405, f"{request.method} is not allowed here.")
            else:
                raise _Refused(404, "There is no such page.")
        except _Refused as refused:
            await _respond(send, refused.status, refused.text.encode() + b"\n", "text/plain; charset=utf-8")
        except Exception as exc:  # a bug or the store: said once, in a line, never the page's end
            print(f"pegboard approvals serve: {request.method} {request.path} failed: {type(exc).__name__}: "
                  f"{redact(str(exc))}", file=sys.stderr, flush=True)
            await _respond(send, 500, b"The page failed; the terminal running pegboard approvals serve says why.\n",
                           "text/plain; charset=utf-8")

    def _admit(self, request: PageRequest) -> Approver:
        host = request.header("host")
        if self.hosts is not None and host not in self.hosts:
            raise _Refused(403, "Refused: this page answers only at the address pegboard approvals serve printed "
                                "(its Host header did not match).")
        approver = self.identify(request)
        if approver is None:
            raise _Refused(403, "Refused: this page needs the token in the address pegboard approvals serve "
                                "printed; open that address.")
        return approver

    # --- reading -------------------------------------------------------------

    def _store(self) -> Any:
        return self.toolbox.plugins.stores(CORE_COMPONENT)

    def _visible(self, approver: Approver, calls: list[PendingCall], client: str) -> list[PendingCall]:
        return [c for c in calls if (approver.clients is None or c.requester in approver.clients)
                and (not client or c.requester == client)]

    def _calls(self, approver: Approver, client: str) -> tuple[list[PendingCall], list[PendingCall]]:
        """The calls waiting and the calls answered lately that this approver sees."""
        waiting = self._visible(approver, list_pending(self.toolbox, limit=WAITING_LIMIT), client)
        answered = self._visible(approver, recently_answered(self.toolbox, limit=ANSWERED_LIMIT * 5), client)
        return waiting, answered[:ANSWERED_LIMIT]

    def _read(self, approver: Approver, filters: Mapping[str, str]) -> tuple[dict[str, Any], str]:
        """Everything the page shows, from the store, and its ``_mark``."""
        waiting, answered = self._calls(approver, filters.get("client", ""))
        since = SINCE.get(filters.get("since", "7d"))
        decisions = recorded(self._store(), session=filters.get("session") or None,
                             tool=filters.get("tool") or None, client=filters.get("client") or None,
                             decision=filters.get("decision") if filters.get("decision") in DECISIONS
                             else None, since=None if since is None else time.time() - since,
                             limit=DECISIONS_LIMIT)[::-1]
        seen = {"waiting": waiting, "answered": answered, "decisions": decisions,
                "sessions": self._sessions({c.session_id for c in waiting + answered})}
        return seen, self._fingerprint(waiting, answered)

    def _sessions(self, ids: set[str]) -> dict[str, dict[str, Any]]:
        """Each durable session's folder and parent, by id."""
        if not ids:
            return {}
        from sqlalchemy import select

        with self._store().begin(read_only=True) as conn:
            rows = conn.execute(select(sessions.c.id, sessions.c.root, sessions.c.parent_id)
                                .where(sessions.c.id.in_(sorted(ids))))
            return {row.id: {"root": row.root, "parent": row.parent_id} for row in rows}

    def _mark(self, approver: Approver, client: str) -> str:
        """A fingerprint of what the page shows: it changes when the page would."""
        return self._fingerprint(*self._calls(approver, client))

    def _fingerprint(self, waiting: list[PendingCall], answered: list[PendingCall]) -> str:
        seen = ([(c.id, c.status) for c in waiting], [(c.id, c.status) for c in answered], newest_id(self._store()))
        return hashlib.sha256(repr(seen).encode()).hexdigest()[:16]

    # --- the page -------------------------------------------------------------

    async def _page(self, request: PageRequest, approver: Approver, send: Send) -> None:
        import anyio

        filters = {k: request.query.get(k, "") for k in ("client", "tool", "decision", "session", "since")}
        filters["since"] = filters["since"] if filters["since"] in SINCE else "7d"
        notice: tuple[str, str] | None = None
        seen: dict[str, Any] | None
        try:
            seen, mark = await anyio.to_thread.run_sync(lambda: self._read(approver, filters))
        except Exception as exc:
            seen, mark = None, ""
            notice = ("error", f"The store could not be read: {self._store().describe_error(exc)}")
        if notice is None and request.query.get("notice") in _NOTICES and _PENDING_ID.fullmatch(
                request.query.get("id", "")):
            kind, text = _NOTICES[request.query["notice"]]
            notice = (kind, text.format(id=request.query["id"]))
        nonce = secrets.token_urlsafe(16)
        body = _render(self, approver, filters, seen, mark, notice, nonce)
        await _respond(send, 200, body.encode(), "text/html; charset=utf-8", nonce=nonce)

    def csrf_token(self, approver: Approver) -> str:
        """The token the page's forms carry for ``approver`` (an HMAC under ``secret``)."""
        return hmac.new(self._secret, f"csrf:{approver.name}".encode(), hashlib.sha256).hexdigest()

    # --- answering --------------------------------------------------------------

    async def _answer(self, request: PageRequest, approver: Approver, receive: Receive, send: Send) -> None:
        import anyio

        self._check_origin(request)
        if (request.header("content-type") or "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            raise _Refused(415, "Refused: answers come from the page's forms.")
        form = dict(parse_qsl((await _body(receive)).decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get("csrf", "").encode(), self.csrf_token(approver).encode()):
            raise _Refused(403, "Refused: the form's CSRF token is missing or wrong; answer from the page itself.")
        pending_id, digest, action = form.get("id", ""), form.get("digest", ""), form.get("action", "")
        if not _PENDING_ID.fullmatch(pending_id) or not _DIGEST.fullmatch(digest) or action not in (
                "approve", "always", "deny"):
            raise _Refused(400, "Refused: the form is not one of the page's.")
        outcome = await anyio.to_thread.run_sync(lambda: self._settle(approver, pending_id, digest, action, form))
        # After a POST, a GET of the page (a reload does not answer twice), saying what happened.
        location = "./?" + "&".join(p for p in (approver.carry, urlencode({"notice": outcome, "id": pending_id})) if p)
        await _respond(send, 303, b"", "text/plain", extra=[(b"location", location.encode())])

    def _check_origin(self, request: PageRequest) -> None:
        origin = request.header("origin")
        if origin is not None and origin != f"{request.scheme}://{request.header('host')}" \
                and origin not in self.origins:
            raise _Refused(403, f"Refused: a form posted from {origin} (CSRF); answer from the page itself.")
        site = request.header("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise _Refused(403, f"Refused: a form posted from a {site} page (CSRF); answer from the page itself.")

    def _settle(self, approver: Approver, pending_id: str, digest: str, action: str, form: Mapping[str, str]) -> str:
        """Record the answer through ``Toolbox.answer_pending``; the notice to show."""

        call = next((c for c in self._visible(approver, list_pending(self.toolbox), "") if c.id == pending_id), None)
        if call is None:
            return "gone"
        if action == "deny":
            message = " ".join(form.get("message", "").split())[:MAX_MESSAGE] or None
            answer = Answer(allow=False, message=message, approver=approver.name)
        elif action == "always":
            scope = form.get("scope", "")
            rules = call.suggestions or (call.tool,)
            index = form.get("rule", "0")
            if scope not in SCOPES or scope not in approver.remember or not index.isdigit() or int(index) >= len(rules):
                raise _Refused(400, "Refused: choose one of the suggested rules and where to keep it.")
            answer = Answer(allow=True, remember=scope, rule=rules[int(index)],  # type: ignore[arg-type]
                            approver=approver.name)
        else:
            answer = Answer(allow=True, approver=approver.name)

        try:
            self.toolbox.answer_pending(pending_id, answer, shown_digest=digest)
        except KeyError:
            return "gone"
        except AlreadyAnswered:
            return "answered"
        except ChangedSinceShown:
            return "changed"
        return {"approve": "approved", "always": "remembered", "deny": "denied"}[action]

    # --- updates ----------------------------------------------------------------

    async def _events(self, request: PageRequest, approver: Approver, receive: Receive, send: Send) -> None:
        import anyio

        if self._streams >= MAX_STREAMS:
            raise _Refused(503, "Too many pages are open on this server; close one.")
        client = request.query.get("client", "")
        last = request.query.get("mark", "")
        self._streams += 1
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _headers(
                "text/event-stream; charset=utf-8")})
            await send({"type": "http.response.body", "body": b"retry: 2000\n\n", "more_body": True})
            async with anyio.create_task_group() as group:
                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                started = quiet = time.monotonic()
                while time.monotonic() - started < STREAM_MAX_S:
                    try:
                        mark = await anyio.to_thread.run_sync(lambda: self._mark(approver, client))
                    except Exception:  # the store is away: the page says so when it reloads
                        mark = last
                    if mark != last:
                        last = mark
                        await send({"type": "http.response.body", "more_body": True,
                                    "body": f"event: change\ndata: {json.dumps(mark)}\n\n".encode()})
                        quiet = time.monotonic()
                    elif time.monotonic() - quiet > KEEPALIVE_S:
                        await send({"type": "http.response.body", "body": b": still here\n\n", "more_body": True})
                        quiet = time.monotonic()
                    await anyio.sleep(self.poll_s)
                group.cancel_scope.cancel()
            await send({"type": "http.response.body", "body": b""})
        finally:
            self._streams -= 1


# What the page says after an answer: (kind, text).
_NOTICES = {"approved": ("done", "Approved {id}: its session's host runs it next."),
            "remembered": ("done", "Approved {id} and its rule: its session's host runs it and keeps the rule."),
            "denied": ("done", "Denied {id}: its session's host tells the model."),
            "gone": ("error", "No call {id} waits for an answer (its session was deleted, or it ran)."),
            "answered": ("error", "{id} was answered already, elsewhere: each call is answered once."),
            "changed": ("error", "{id}'s tool or input changed since the page showed it: nothing was answered. "
                                 "Look at it again.")}


async def _body(receive: Receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Refused(400, "The request ended early.")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise _Refused(413, "Refused: the form is too large.")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _headers(content_type: str, nonce: str | None = None) -> list[tuple[bytes, bytes]]:
    policy = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    if nonce is not None:
        policy += f"; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'"
    return [(b"content-type", content_type.encode()), (b"cache-control", b"no-store"),
            (b"referrer-policy", b"same-origin"), (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"), (b"content-security-policy", policy.encode())]


async def _respond(send: Send, status: int, body: bytes, content_type: str, *, nonce: str | None = None,
                   extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = _headers(content_type, nonce) + (extra or []) + [(b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- HTML ---------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _ago(epoch: float | None) -> str:
    if epoch is None:
        return ""
    seconds = max(0.0, time.time() - epoch)
    if seconds < 60:
        said = f"{seconds:.0f} s ago"
    elif seconds < 3600:
        said = f"{seconds / 60:.0f} min ago"
    elif seconds < 86400:
        said = f"{seconds / 3600:.0f} h ago"
    else:
        said = time.strftime("%Y-%m-%d", time.localtime(epoch))
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))
    return f'<time datetime="{_e(stamp)}" title="{_e(stamp)}">{_e(said)}</time>'


def _link(approver: Approver, path: str, **query: str) -> str:
    given = urlencode({k: v for k, v in query.items() if v})
    joined = "&".join(p for p in (approver.carry, given) if p)
    return f"{path}?{joined}" if joined else path


def _render(page: ApprovalsPage, approver: Approver, filters: Mapping[str, str], seen: dict[str, Any] | None,
            mark: str, notice: tuple[str, str] | None, nonce: str) -> str:
    waiting = seen["waiting"] if seen else []
    count = sum(1 for c in waiting if c.status == "pending")
    title = f"({count}) pegboard approvals" if count else "pegboard approvals"
    parts = [f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{_e(title)}</title>
<style nonce="{nonce}">{_STYLE}</style></head>
<body data-events="{_e(_link(approver, 'events', client=filters.get('client', ''), mark=mark))}">
<header><h1>pegboard approvals</h1><p>Answering as <b id="approver">{_e(approver.name)}</b> ·
store {_e(page._store().url)}</p></header><main>"""]
    if notice is not None:
        kind, text = notice
        parts.append(f'<p id="notice" class="notice {_e(kind)}" role="status">{_e(text)}</p>')
    if seen is not None:
        parts.append(_waiting_section(page, approver, filters, seen))
        parts.append(_answered_section(seen))
        parts.append(_decisions_section(page, approver, filters, seen))
    parts.append(f'</main><script nonce="{nonce}">{_SCRIPT}</script></body></html>')
    return "".join(parts)


def _where(call: PendingCall, sessions: Mapping[str, dict[str, Any]]) -> str:
    session = sessions.get(call.session_id, {})
    rows = [("session", call.session_id), ("folder", session.get("root") or "(not recorded)")]
    if session.get("parent"):
        rows.append(("made from session", session["parent"]))
    rows += [("requester", call.requester or "(not recorded)"), ("call id", call.call_id),
             ("asked by", redact(call.source)), ("input digest", (call.digest or call.current_digest())[:16])]
    cells = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    return f'<dl class="where">{cells}<dt>asked</dt><dd>{_ago(call.created_at)}</dd></dl>'


def _waiting_section(page: ApprovalsPage, approver: Approver, filters: Mapping[str, str],
                     seen: dict[str, Any]) -> str:
    cards = [_card(page, approver, call, seen["sessions"]) for call in seen["waiting"]]
    if not cards:
        cards = ['<p id="none" class="empty">No call waits for an answer.</p>']
    client = filters.get("client", "")
    shown = f" for {_e(client)}" if client else ""
    return (f'<section><h2>Waiting<span id="count">{shown} ({len(seen["waiting"])})</span></h2>'
            f'<div id="calls">{"".join(cards)}</div></section>')


def _card(page: ApprovalsPage, approver: Approver, call: PendingCall, sessions: Mapping[str, dict[str, Any]]) -> str:
    head = (f'<h3><span class="tool">{_e(call.tool)}</span> <span class="status {_e(call.status)}">'
            f'{_e({"pending": "waits for you"}.get(call.status, call.status))}</span></h3>'
            f'<p class="reason">{_e(redact(call.reason))}</p>'
            f'<pre class="input">{_e(preview(call.input, PREVIEW_CHARS))}</pre>{_where(call, sessions)}')
    if call.status != "pending":
        answer = call.answer
        who = f" by {answer.approver}" if answer is not None and answer.approver else ""
        foot = f'<p class="later">{_e(call.status.capitalize() + who)}; its session\'s host runs it next.</p>'
        return f'<article class="call" id="call-{_e(call.id)}" data-status="{_e(call.status)}">{head}{foot}</article>'
    rules = call.suggestions or (call.tool,)
    rule_options = "".join(f'<option value="{i}">{_e(redact(rule))}</option>' for i, rule in enumerate(rules))
    scope_options = "".join(f'<option value="{k}">{_e(v)}</option>' for k, v in SCOPES.items()
                            if k in approver.remember)
    always = f"""<fieldset><legend>Approve always</legend>
<label>Rule <select name="rule">{rule_options}</select></label>
<label>Keep it <select name="scope">{scope_options}</select></label>
<button name="action" value="always" class="allow">Approve always</button></fieldset>""" if scope_options else ""
    form = f"""<form method="post" action="{_e(_link(approver, 'answer'))}">
<input type="hidden" name="csrf" value="{_e(page.csrf_token(approver))}">
<input type="hidden" name="id" value="{_e(call.id)}">
<input type="hidden" name="digest" value="{_e(call.current_digest())}">
<div class="row"><button name="action" value="approve" class="allow">Approve once</button></div>
{always}
<fieldset><legend>Deny</legend>
<label>Message to the model <textarea name="message" rows="2" maxlength="{MAX_MESSAGE}"
placeholder="Why not, or what to do instead"></textarea></label>
<button name="action" value="deny" class="deny">Deny</button></fieldset></form>"""
    return (f'<article class="call" id="call-{_e(call.id)}" data-status="pending" aria-label="{_e(call.tool)} '
            f'call {_e(call.id)}">{head}{form}</article>')


def _answered_section(seen: dict[str, Any]) -> str:
    items = []
    for call in seen["answered"]:
        answer = call.answer
        if answer is None:
            continue
        said = ("denied" if not answer.allow else f"approved always ({answer.remember})" if answer.remember
                else "approved once")
        state = {"done": "ran" if answer.allow else "the model was told",
                 "approved": "waits for its session's host to run it",
                 "denied": "waits for its session's host to tell the model"}.get(call.status, call.status)
        who = f" by {answer.approver}" if answer.approver else ""
        items.append(f'<li id="answered-{_e(call.id)}" data-status="{_e(call.status)}"><b>{_e(call.tool)}</b> '
                     f'{_e(said + who)} · <span class="state">{_e(state)}</span> · session {_e(call.session_id)} · '
                     f'{_ago(call.resolved_at)}'
                     + (f'<br><span class="message">message: {_e(answer.message)}</span>' if answer.message else "")
                     + "</li>")
    body = "".join(items) or '<li class="empty">Nothing answered yet.</li>'
    return f'<section><h2>Recently answered</h2><ul id="answered" class="list">{body}</ul></section>'


def _decisions_section(page: ApprovalsPage, approver: Approver, filters: Mapping[str, str],
                       seen: dict[str, Any]) -> str:
    hidden = "".join(f'<input type="hidden" name="{_e(k)}" value="{_e(v)}">' for k, v in parse_qsl(approver.carry))
    since = "".join(f'<option value="{k}"{" selected" if filters.get("since") == k else ""}>{_e(v)}</option>'
                    for k, v in SINCE_LABELS.items())
    decision = "".join(f'<option value="{k}"{" selected" if filters.get("decision") == k else ""}>{_e(v)}</option>'
                       for k, v in (("", "any"), *DECISIONS.items()))
    form = f"""<form method="get" action="./" class="filters">{hidden}
<label>Tool <input name="tool" value="{_e(filters.get('tool', ''))}" size="10"></label>
<label>Decision <select name="decision">{decision}</select></label>
<label>Session <input name="session" value="{_e(filters.get('session', ''))}" size="10"></label>
<label>Client <input name="client" value="{_e(filters.get('client', ''))}" size="10"
title="who the calls were made for"></label>
<label>When <select name="since">{since}</select></label>
<button>Filter</button></form>"""
    items = []
    for row in seen["decisions"]:
        answer = f"answer {row['answer']} ({row['host']}) · " if row.get("answer") else ""
        items.append(f'<li><b>{_e(row["tool"])}</b> '
                     f'<span class="decision {_e(row["decision"])}">{_e(row["decision"])}</span> · '
                     f'{_e(redact(row["reason"]))}<br><span class="meta">session {_e(row["session_id"])} · '
                     f'{_e("client " + row["client"] + " · ") if row.get("client") else ""}decided by {_e(row["source_kind"])} · mode {_e(row["mode"])} · {_e(answer)}'
                     f'{_ago(row["at"])}</span><br><code>{_e(row["input_preview"])}</code></li>')
    if not items:
        off = "" if page.toolbox.settings.core.audit.enabled else (
            " The audit log is off here: [audit] enabled = true in your config.toml records decisions.")
        items.append(f'<li class="empty">No decisions recorded that match.{_e(off)}</li>')
    return (f'<section><h2>Recent decisions</h2>{form}<ul id="decisions" class="list">{"".join(items)}</ul>'
            "</section>")


_STYLE = """
:root{color-scheme:light dark;--line:#8884;--allow:#1a7f37;--deny:#c62828;--soft:#8881}
body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:0 .75rem 3rem}
header h1{font-size:1.3rem;margin:.8rem 0 0}header p{margin:.2rem 0 1rem;color:GrayText;overflow-wrap:anywhere}
h2{font-size:1.1rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
h3{margin:0 0 .3rem;font-size:1.05rem}
.call{border:1px solid var(--line);border-radius:.5rem;padding:.75rem;margin:0 0 1rem}
.status{font-size:.8rem;font-weight:normal;border-radius:1rem;padding:.1rem .5rem;background:var(--soft)}
pre.input,code{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85rem}
pre.input{background:var(--soft);padding:.5rem;border-radius:.3rem;max-height:16rem;overflow:auto}
dl.where{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .6rem;font-size:.85rem;margin:.5rem 0}
dl.where dt{color:GrayText}dl.where dd{margin:0;overflow-wrap:anywhere}
fieldset{border:1px solid var(--line);border-radius:.4rem;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:.5rem;
align-items:end}
label{display:flex;flex-direction:column;font-size:.85rem;flex:1 1 12rem}
select,textarea,input,button{font:inherit;min-height:2.5rem;max-width:100%}
button{border-radius:.4rem;border:1px solid var(--line);padding:.3rem .9rem;cursor:pointer}
button.allow{background:var(--allow);color:#fff}button.deny{background:var(--deny);color:#fff}
.row{margin:.5rem 0}.notice{padding:.5rem;border-radius:.4rem;background:var(--soft)}
.notice.error{border:1px solid var(--deny)}
ul.list{list-style:none;padding:0}ul.list li{border-bottom:1px solid var(--line);padding:.4rem 0;
overflow-wrap:anywhere}
.decision.allow{color:var(--allow)}.decision.deny{color:var(--deny)}.decision.ask{color:#b26a00}.meta{font-size:.8rem;color:GrayText}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end}form.filters label{flex:1 1 7rem}
.empty{color:GrayText}
"""

# Fetch the page again when the stream says it changed, and merge it in: a
# call's card is kept as it is (a message being typed) while its state is.
_SCRIPT = """
(function () {
  var url = new URL(location.href);
  if (url.searchParams.has("notice")) {
    url.searchParams.delete("notice"); url.searchParams.delete("id");
    history.replaceState(null, "", url.toString());
  }
  var events = document.body.getAttribute("data-events");
  if (!window.EventSource || !events) { return; }
  var busy = false, again = false;
  function merge(fresh) {
    var list = document.getElementById("calls"), next = fresh.getElementById("calls");
    if (list && next) {
      var kept = {};
      Array.prototype.forEach.call(list.children, function (el) {
        kept[el.id + "|" + el.getAttribute("data-status")] = el;
      });
      var children = Array.prototype.map.call(next.children, function (el) {
        return kept[el.id + "|" + el.getAttribute("data-status")] || document.importNode(el, true);
      });
      list.replaceChildren.apply(list, children);
    }
    ["count", "answered", "decisions"].forEach(function (id) {
      var mine = document.getElementById(id), theirs = fresh.getElementById(id);
      if (mine && theirs && mine.innerHTML !== theirs.innerHTML) { mine.innerHTML = theirs.innerHTML; }
    });
    document.title = fresh.title;
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, {cache: "no-store"}).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text) { merge(new DOMParser().parseFromString(text, "text/html")); }
      }).catch(function () {}).then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  new EventSource(events).addEventListener("change", refresh);
})();
"""


# --- serving it on this machine -----------------------------------------------------


def serve(toolbox: Toolbox, port: int, *, open_browser: bool, say: Callable[[str], None]) -> None:
    """Listen on 127.0.0.1:``port`` (0: a free one), say the address with a
    new token, and serve the page to the local user until interrupted."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)  # from here a browser may connect: it waits until uvicorn accepts
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    port = sock.getsockname()[1]

    token = secrets.token_urlsafe(32)
    url = f"http://127.0.0.1:{port}/?{urlencode({'token': token})}"
    app = ApprovalsPage(toolbox, TokenGate(token, local_user()), hosts=loopback_hosts(port))
    say(f"The approvals page, for {local_user()} only (the address holds its token; Ctrl-C stops it):\n{url}")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])

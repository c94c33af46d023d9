"""The approvals page on a team's server (``/approvals/``): pegboard's page
(``pegboard.ApprovalsPage``, what ``pegboard approvals serve`` shows one
person), for the people holding an approver credential.

Signing in: the page's ``signin`` form takes a credential (an API key made
with ``--approver``, an access token carrying the approver scope, or the
start token) and checks it as a request to ``/mcp`` would be checked; one
that may approve gets a cookie (``HttpOnly``, ``SameSite=Strict``, ``Path``
the page's, ``Secure`` on https), signed with a key the replicas share in the
store, so a page rendered by one replica answers on another. The cookie
names the approver and, for an API key, the key: each request checks the key
again, so revoking it signs its holder out at once. An access token's cookie
lasts as long as the token; any cookie, twelve hours at most.

Each answer is kept with the approver's name (``Answer.approver``), which
the audit log's host column shows ("given with the call, by alice"). An
approver here approves once or denies: "approve always" would write a rule
into the serving user's own files for every client, which is the operator's
config to change ([clients.<id>]), not a click.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["PREFIX", "TeamApprovals", "shared_secret"]

PREFIX = "/approvals"
COOKIE = "pegboard_approver"
MAX_AGE_S = 12 * 3600
MAX_FORM = 8 * 1024
RECHECK_S = 1.0


def shared_secret(store: Any, name: str) -> bytes:
    """A secret every replica of this store uses, made by the first that asks."""
    from sqlalchemy import select

    from ._serve_tables import secrets as table

    from sqlalchemy.exc import IntegrityError

    query = select(table.c.value).where(table.c.name == name)
    with store.begin(read_only=True) as conn:
        found = conn.execute(query).scalar()
    if found is None:
        try:
            with store.begin() as conn:
                conn.execute(table.insert().values(name=name, value=secrets.token_hex(32), created_at=time.time()))
        except IntegrityError:
            pass  # another replica made it first: its value is the one
        with store.begin(read_only=True) as conn:
            found = conn.execute(query).scalar()
    return bytes.fromhex(found)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TeamApprovals:
    """ASGI, for every path under ``/approvals``."""

    def __init__(self, toolbox: Any, credentials: Any, store: Any, log: Any, *, hosts: frozenset[str] | None,
                 secure: bool, cookie_key: bytes, csrf_key: bytes, origins: frozenset[str] = frozenset()):
        from pegboard import ApprovalsPage

        self.credentials = credentials
        self.store = store
        self.log = log
        self.secure = secure
        self.hosts = hosts
        self.origins = origins
        self._key = cookie_key
        self._checked: dict[str, tuple[float, bool]] = {}
        self.page = ApprovalsPage(toolbox, self.identify, secret=csrf_key, hosts=hosts, origins=origins)

    # --- the cookie ------------------------------------------------------------------

    def _cookie(self, name: str, via: str, key_id: str | None, until: float) -> str:
        payload = _b64(json.dumps({"n": name, "v": via, "k": key_id, "x": until}, separators=(",", ":")).encode())
        return f"{payload}.{hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()}"

    def _read_cookie(self, request: Any) -> dict[str, Any] | None:
        raw = request.header("cookie") or ""
        value = next((v for k, v in (part.strip().partition("=")[::2] for part in raw.split(";")) if k == COOKIE), "")
        payload, _, signature = value.partition(".")
        expected = hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()
        if not payload or not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        try:
            found = json.loads(_unb64(payload))
        except ValueError:
            return None
        if not isinstance(found, dict) or not isinstance(found.get("x"), (int, float)) or found["x"] < time.time():
            return None
        return found

    def identify(self, request: Any) -> Any:
        """The approver a request's cookie names, or None (expired, forged, or its key revoked).
        A key is looked up again at most every ``RECHECK_S`` (the page asks once per request, and
        so does the sign-in check before it)."""
        from pegboard import Approver

        found = self._read_cookie(request)
        if found is None:
            return None
        key_id = found.get("k")
        if key_id:
            checked = self._checked.get(key_id)
            if checked is None or checked[0] < time.monotonic():
                checked = (time.monotonic() + RECHECK_S, self._key_may_approve(key_id))
                if len(self._checked) > 1000:
                    self._checked.clear()
                self._checked[key_id] = checked
            if not checked[1]:
                return None
        return Approver(name=str(found["n"]), remember=())

    def _key_may_approve(self, key_id: str) -> bool:
        from sqlalchemy import select

        from ._serve_tables import keys

        now = time.time()
        with self.store.begin(read_only=True) as conn:
            row = conn.execute(select(keys.c.approver, keys.c.revoked_at, keys.c.expires_at)
                               .where(keys.c.id == key_id)).first()
        return bool(row is not None and row.approver and row.revoked_at is None
                    and (row.expires_at is None or row.expires_at > now))

    # --- ASGI --------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import anyio

        from pegboard import PageRequest

        path = scope["path"][len(PREFIX):] or ""
        if path == "":
            await _send(send, 308, b"", "text/plain", [(b"location", b"approvals/")])
            return
        inner = {**scope, "path": path, "root_path": scope.get("root_path", "") + PREFIX}
        request = PageRequest(inner)
        if self.hosts is not None and request.header("host") not in self.hosts:
            await _send(send, 403, b"Refused: this page answers only at its server's own address.\n", "text/plain")
            return
        if path == "/signin":
            await self._signin(request, receive, send)
            return
        if path == "/signout" and request.method == "POST":
            await _send(send, 303, b"", "text/plain", [(b"location", b"signin"), self._set_cookie("", 0)])
            return
        who = await anyio.to_thread.run_sync(self.identify, request)
        if who is None:
            if request.method == "GET" and path == "/":
                await _send(send, 303, b"", "text/plain", [(b"location", b"signin")])
            else:
                await _send(send, 403, b"Refused: sign in on the approvals page first (approvals/signin).\n",
                            "text/plain")
            return
        await self.page(inner, receive, send)

    def _set_cookie(self, value: str, max_age: int) -> tuple[bytes, bytes]:
        flags = f"; Max-Age={max_age}; Path={PREFIX}/; HttpOnly; SameSite=Strict" + ("; Secure" if self.secure else "")
        return b"set-cookie", f"{COOKIE}={value}{flags}".encode()

    async def _signin(self, request: Any, receive: Any, send: Any) -> None:
        if request.method == "GET":
            await _send(send, 200, _signin_page("").encode(), "text/html; charset=utf-8")
            return
        if request.method != "POST":
            await _send(send, 405, b"GET or POST.\n", "text/plain")
            return
        origin, site = request.header("origin"), request.header("sec-fetch-site")
        if (origin is not None and origin != f"{request.scheme}://{request.header('host')}"
                and origin not in self.origins) or (site is not None and site not in ("same-origin", "none")):
            await _send(send, 403, b"Refused: sign in from the page itself.\n", "text/plain")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_FORM:
                await _send(send, 413, b"Too long.\n", "text/plain")
                return
            if not message.get("more_body"):
                break
        credential = dict(parse_qsl(body.decode("utf-8", "replace"))).get("credential", "").strip()
        from ._serve_credentials import SignedIn, Unavailable

        try:
            verdict = await self.credentials.check([b"Bearer " + credential.encode("utf-8", "replace")])
        except Unavailable as exc:
            self.log.event("approvals.sign_in_unavailable", level="error", why=str(exc))
            await _send(send, 503, _signin_page("The sign-in could not be checked just now; try again.").encode(),
                        "text/html; charset=utf-8")
            return
        if not isinstance(verdict, SignedIn) or not verdict.approver:
            why = verdict.why if not isinstance(verdict, SignedIn) else f"{verdict.client.id} may not approve"
            self.log.event("approvals.sign_in_refused", level="warning", why=why)
            await _send(send, 403, _signin_page("That credential does not let you answer calls here.").encode(),
                        "text/html; charset=utf-8")
            return
        client = verdict.client
        until = time.time() + MAX_AGE_S
        if verdict.expires_at is not None:
            until = min(until, verdict.expires_at)
        cookie = self._cookie(client.id, client.via, verdict.key_id, until)
        self.log.event("approvals.signed_in", approver=client.id, via=client.via)
        await _send(send, 303, b"", "text/plain", [(b"location", b"./"),
                                                   self._set_cookie(cookie, max(1, int(until - time.time())))])


async def _send(send: Any, status: int, body: bytes, content_type: str,
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type.encode()), (b"cache-control", b"no-store"),
               (b"content-security-policy", b"default-src 'none'; form-action 'self'; frame-ancestors 'none'"),
               (b"x-frame-options", b"DENY"), (b"referrer-policy", b"same-origin"),
               (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _signin_page(problem: str) -> str:
    said = f'<p role="alert">{html.escape(problem)}</p>' if problem else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in: pegboard approvals</title></head>
<body><h1>pegboard approvals</h1>{said}
<form method="post" action="signin">
<label>API key or access token <input type="password" name="credential" autocomplete="off" required></label>
<button>Sign in</button></form>
<p>An API key made with <code>pegboard serve keys add NAME --approver</code>, or an access token with the
approver scope.</p></body></html>"""

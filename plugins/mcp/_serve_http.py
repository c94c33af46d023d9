"""``pegboard serve --http``: what stands between the port and the tools.

* **A credential on every request.** A bearer token, new at each start
  (``secrets.token_urlsafe``) unless the person names a file or a variable
  holding one; a generated token is written 0600 in a 0700 folder of
  pegboard's data folder, and stderr says where, never what (unless asked).
  A team's server also takes the API keys the operator issued and access
  tokens of the organisation's authorization server
  (``_serve_credentials``). Every HTTP request, whatever its path or method,
  is refused with 401 and a ``WWW-Authenticate: Bearer`` header unless its
  ``Authorization`` header carries one of them, but the health checks, the
  OAuth protected resource metadata and the approvals page (which signs its
  people in itself). An elicitation answer arrives as a request like any
  other, so only a client that signed in can give one. ``--no-auth``
  (loopback only, warned at every start) is for a single-user test setting.
* **The Host and Origin headers** are checked on every address (DNS
  rebinding: a web page whose name was made to point at 127.0.0.2 must not
  reach it), unless ``--allow-remote``, where clients name the machine as
  they please; ``--allow-remote`` also needs TLS or ``--trusted-network``.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["APPROVER_KEY", "CLIENT_KEY", "HttpPlan", "SignInGate", "TokenSource", "host_checks", "listen",
           "prepare_token", "token_file_path"]

REALM = "pegboard serve"
CLIENT_KEY = "pegboard.client"
APPROVER_KEY = "pegboard.approver"
MIN_TOKEN_LENGTH = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class TokenSource:
    """Where the token comes from: ``file`` or ``env`` named by the person, else generated."""

    file: Path | None = None
    env: str | None = None
    show: bool = False


@dataclass(frozen=True)
class HttpPlan:
    host: str
    port: int
    allow_remote: bool
    tls: tuple[str, str] | None
    no_auth: bool
    tokens: TokenSource
    log_json: bool = False

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_literal(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def host_checks(host: str, port: int, scheme: str, allow_remote: bool) -> Any:
    """The SDK's Host/Origin check for this address: the names a client on
    this machine uses for it, with its port. Off only for ``--allow-remote``
    on an address that is not loopback (clients reach it by names of their own)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if allow_remote and not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {_host_literal(host)}
    if host in LOOPBACK_NAMES:
        names |= {"127.0.0.1", "localhost", "[::1]"}
    default_port = {"http": 80, "https": 443}[scheme]
    hosts = [f"{name}:{port}" for name in sorted(names)]
    if port == default_port:
        hosts += sorted(names)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"{scheme}://{h}" for h in hosts])


def listen(host: str, port: int) -> socket.socket:
    """The bound socket (port 0 picks one), before anything is written: a port
    in use must not overwrite the token file of the server that holds it."""
    import click

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by every accepted connection: without it a 2026-07-28 request's answer waited
        # out the client's delayed ACK (about 45 ms a call on Linux, against 3 ms with it).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        # listening from here: a client told the address may connect at once
        # (it waits in the backlog until uvicorn accepts)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


def token_file_path(folder: Path, host: str, port: int) -> Path:
    """Where a generated token is kept: one file per address, in the plugin's own folder."""
    return folder / "serve" / f"{host.replace(':', '_')}-{port}.token"


def _checked(token: str, where: str) -> str:
    import click

    token = token.strip()
    if len(token) < MIN_TOKEN_LENGTH:
        raise click.ClickException(f"the token in {where} is {len(token)} characters long; "
                                   f"a bearer token needs at least {MIN_TOKEN_LENGTH} (a short one can be guessed)")
    if not token.isascii() or not token.isprintable() or any(c.isspace() for c in token):
        raise click.ClickException(f"the token in {where} must be printable ASCII without spaces "
                                   "(it is sent in an HTTP header)")
    return token


def _read_token_file(path: Path) -> str:
    import click

    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise click.ClickException(f"--token-file {path}: not a regular file")
        if info.st_mode & 0o077:
            raise click.ClickException(
                f"--token-file {path}: other users can read or write it (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"chmod 600 {path}")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"--token-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise click.ClickException(f"--token-file {path}: not UTF-8 text") from None
    return _checked(text, f"--token-file {path}")


def prepare_token(tokens: TokenSource, folder: Path, host: str, port: int) -> tuple[str, str, Path | None]:
    """The token, the line that tells the person where it is, and the file
    written for it (a generated token only; removed when serve stops)."""
    from pegboard.paths import atomic_write, resolve_path

    header = "Authorization: Bearer "
    if tokens.file is not None:
        token = _read_token_file(tokens.file)
        where = f"the token in {tokens.file}"
        written = None
    elif tokens.env is not None:
        import click

        value = os.environ.get(tokens.env)
        if not value:
            raise click.ClickException(f"--token-env {tokens.env}: the variable is not set or empty")
        token = _checked(value, f"${tokens.env}")
        where = f"the value of ${tokens.env}"
        written = None
    else:
        token = secrets.token_urlsafe(32)
        written = token_file_path(folder, host, port)
        for part in (written.parent.parent, written.parent):
            part.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(part, 0o700)
        atomic_write(resolve_path(written, written.parent), token + "\n", default_mode=0o600)
        os.chmod(written, 0o600)
        where = f"the token in {written} (readable by you only; a new one at each start)"
    shown = token if tokens.show else "<token>"
    return token, f'every request must send the header "{header}{shown}", {where}', written


def forget_token(written: Path | None, token: str) -> None:
    """Remove the generated token's file, if it still holds this serve's token."""
    if written is None:
        return
    try:
        if written.read_text(encoding="utf-8").strip() == token:
            written.unlink()
    except OSError:
        pass


class SignInGate:
    """ASGI: every HTTP request signs in with a bearer credential or is refused
    (401, or 403 for a valid token whose scopes give no level), but the paths
    a load balancer or an OAuth client must reach without one (``public``);
    a request let in carries its ``pegboard.Client`` in the scope (and the
    SDK's ``AuthenticatedUser``, so a handshake-era session stays its
    creator's). Each request is logged with its status and time."""

    def __init__(self, app: Any, credentials: Any, log: Any, *, public: tuple[str, ...] = (),
                 resource_metadata: str | None = None) -> None:
        self.app = app
        self.credentials = credentials
        self.log = log
        self.public = public
        self.resource_metadata = resource_metadata

    def _is_public(self, path: str) -> bool:
        return any(path == p or (p.endswith("/") and path.startswith(p)) for p in self.public)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        started = time.monotonic()
        status: list[int] = []

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        client = None
        try:
            if self._is_public(scope.get("path", "")):
                await self.app(scope, receive, watch)
                return
            from ._serve_credentials import SignedIn, Unavailable

            try:
                verdict = await self.credentials.check([v for k, v in scope.get("headers", [])
                                                        if k.lower() == b"authorization"])
            except Unavailable as exc:
                self.log.event("sign_in_unavailable", level="error", why=str(exc), path=scope.get("path"))
                if scope["type"] == "http":
                    body = b"The sign-in could not be checked just now (see the server's log); try again.\n"
                    await watch({"type": "http.response.start", "status": 503, "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"), (b"retry-after", b"5"),
                        (b"content-length", str(len(body)).encode())]})
                    await watch({"type": "http.response.body", "body": body})
                return
            if isinstance(verdict, SignedIn):
                client = verdict.client
                _sign_in(scope, verdict)
                await self.app(scope, receive, watch)
                return
            self.log.event("sign_in_refused", level="warning" if verdict.sent else "info", why=verdict.why,
                           status=verdict.status, path=scope.get("path"), peer=_peer(scope))
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self._refuse(verdict, watch)
        finally:
            if scope["type"] == "http":
                self.log.event("request", method=scope.get("method"), path=scope.get("path"),
                               status=status[0] if status else None, ms=round((time.monotonic() - started) * 1000, 1),
                               client=client.id if client else None, via=client.via if client else None)

    async def _refuse(self, verdict: Any, send: Any) -> None:
        parts = [f'Bearer realm="{REALM}"']
        if verdict.status == 403:
            parts.append('error="insufficient_scope"')
            if verdict.scope:
                parts.append(f'scope="{verdict.scope}"')
        elif verdict.sent:
            parts.append('error="invalid_token"')
        if self.resource_metadata:
            parts.append(f'resource_metadata="{self.resource_metadata}"')
        if verdict.status == 403:
            body = ("Signed in, but this credential's scopes give no permission level here; ask for one of: "
                    f"{verdict.scope}.\n").encode()
        else:
            body = (("The credential is not accepted. " if verdict.sent else "This server needs a credential. ")
                    + "Send the header 'Authorization: Bearer <token>': the token pegboard serve printed where to "
                      "find when it started, an API key from `pegboard serve keys add`"
                    + (", or an access token from the authorization server its metadata names" if
                       self.resource_metadata else "") + ".\n").encode()
        await send({"type": "http.response.start", "status": verdict.status, "headers": [
            (b"www-authenticate", ", ".join(parts).encode()), (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _sign_in(scope: dict[str, Any], verdict: Any) -> None:
    """The identity where the SDK and pegboard's handlers look for it."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from starlette.authentication import AuthCredentials

    from ._serve import client_key

    client = verdict.client
    # The SDK binds a handshake-era session to the (client_id, issuer, subject) that opened it: the
    # whole client, so that another credential of the same name but a wider level cannot use it.
    scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=client_key(client), scopes=list(client.scopes),
                                                  subject=client.id, claims={"iss": client.via}))
    scope["auth"] = AuthCredentials(list(client.scopes))
    scope[CLIENT_KEY] = client
    scope[APPROVER_KEY] = verdict.approver


def _peer(scope: dict[str, Any]) -> str | None:
    peer = scope.get("client")
    return f"{peer[0]}:{peer[1]}" if peer else None


def warn(line: str) -> None:
    print(f"pegboard: {line}", file=sys.stderr, flush=True)

"""``pegboard serve --http``: what stands between the port and the tools.

* **A credential on every request.** A bearer token, new at each start
  (``secrets.token_urlsafe``) unless the person names a file or a variable
  holding one; a generated token is written 0600 in a 0700 folder of
  pegboard's data folder, and stderr says where, never what (unless asked).
  Every HTTP request, whatever its path or method, is refused with 401 and a
  ``WWW-Authenticate: Bearer`` header unless its ``Authorization`` header
  carries the token (compared in constant time). An elicitation answer
  arrives as a request like any other, so only the client that holds the
  token can give one. ``--no-auth`` (loopback only, warned at every start)
  is for a single-user test setting.
* **The Host and Origin headers** are checked on every address (DNS
  rebinding: a web page whose name was made to point at 127.0.0.2 must not
  reach it), unless ``--allow-remote``, where clients name the machine as
  they please; ``--allow-remote`` also needs TLS or ``--trusted-network``.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BearerGate", "HttpPlan", "TokenSource", "host_checks", "listen", "prepare_token", "token_file_path"]

REALM = "pegboard serve"
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


class BearerGate:
    """ASGI: every HTTP request carries ``Authorization: Bearer <token>`` or is refused with 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")

    def _authorized(self, scope: dict[str, Any]) -> tuple[bool, bool]:
        """(allowed, a credential was sent)."""
        values = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if len(values) != 1:
            return False, bool(values)
        scheme, _, credential = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False, True
        return hmac.compare_digest(credential.strip(), self._token), True

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        allowed, sent = self._authorized(scope)
        if allowed:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        challenge = f'Bearer realm="{REALM}"' + (', error="invalid_token"' if sent else "")
        body = (("The bearer token is wrong. " if sent else "This server needs a bearer token. ")
                + "Send the header 'Authorization: Bearer <token>'; pegboard serve printed where the token is "
                  "when it started.\n").encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"www-authenticate", challenge.encode()), (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def warn(line: str) -> None:
    print(f"pegboard: {line}", file=sys.stderr, flush=True)

"""Shared pieces for the web plugin's tests: local servers, a trap listener,
and a guard that fails any test whose code dials a non-loopback address.

Everything listens on 127.0.0.1 (or ::1); nothing here ever connects elsewhere.
"""

from __future__ import annotations

import gzip
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpcore
import pytest

LOOPBACK = {"127.0.0.1", "::1"}


# --- a guard on the real network backend ---------------------------------------


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap httpcore's real connector: a test that reaches it with anything but
    a loopback address fails (and the connection is not made)."""
    violations: list[str] = []
    original = httpcore.AnyIOBackend.connect_tcp

    async def guarded(self: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        if host not in LOOPBACK:
            violations.append(f"{host}:{port}")
            raise AssertionError(f"test tried to connect to {host}:{port}")
        return await original(self, host, port, *args, **kwargs)

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", guarded)
    yield violations
    assert not violations, f"connections attempted outside loopback: {violations}"


class RecordingBackend(httpcore.AsyncNetworkBackend):
    """An inner backend that never connects: it records the address it was
    handed and fails like an unreachable host."""

    def __init__(self) -> None:
        self.dialled: list[tuple[str, int]] = []

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> Any:
        self.dialled.append((host, port))
        raise httpcore.ConnectError(f"recording backend: not connecting to {host}")

    async def sleep(self, seconds: float) -> None:  # pragma: no cover - unused
        pass


def resolver_from(table: dict[str, list[str]]) -> Callable[[str, int], Any]:
    """A fake DNS: names not in ``table`` do not resolve."""

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"fake DNS has no entry for {host}")
        return list(table[host])

    return resolve


# --- a listener that must stay untouched ---------------------------------------


@dataclass
class Trap:
    """A listening socket nobody accepts from: any connect completes in the
    kernel backlog, so ``touched()`` can tell afterwards, with no waiting."""

    sock: socket.socket
    port: int

    def touched(self) -> bool:
        self.sock.setblocking(False)
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True


@pytest.fixture
def trap() -> Iterator[Trap]:
    # Bound on 127.0.0.1 only; the IPv6 forms that map to 127.0.0.1 reach it too.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield Trap(sock, sock.getsockname()[1])
    finally:
        sock.close()


# --- a scriptable HTTP server ---------------------------------------------------

Route = Callable[["Handler"], None]


@dataclass
class Server:
    httpd: http.server.ThreadingHTTPServer
    routes: dict[str, Route]
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # (method, path, headers)
    stop: threading.Event = field(default_factory=threading.Event)
    sni: list[str | None] = field(default_factory=list)
    scheme: str = "http"

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def hits(self, path: str | None = None) -> int:
        return sum(1 for _, p, _ in self.requests if path is None or p == path)


class Handler(http.server.BaseHTTPRequestHandler):
    server_obj: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _dispatch(self) -> None:
        srv: Server = self.server.owner  # type: ignore[attr-defined]
        body = b""
        length = int(self.headers.get("content-length") or 0)
        if length:
            body = self.rfile.read(length)
        self.body = body
        srv.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        route = srv.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_text(404, "not found", "text/plain")
            return
        route(self)

    do_GET = _dispatch
    do_POST = _dispatch

    @property
    def owner(self) -> Server:
        return self.server.owner  # type: ignore[attr-defined,no-any-return]

    def send_text(self, status: int, text: str | bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        data = text.encode() if isinstance(text, str) else text
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def redirect(self, location: str, status: int = 302) -> None:
        self.send_text(status, "", "text/plain", {"Location": location})


def _serve(routes: dict[str, Route], tls: ssl.SSLContext | None = None, family: int = socket.AF_INET) -> Server:
    class _HTTPD(http.server.ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    httpd = _HTTPD((host, 0), Handler)
    server = Server(httpd, routes, scheme="https" if tls else "http")
    if tls is not None:
        def remember_sni(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
            server.sni.append(name)

        tls.sni_callback = remember_sni  # type: ignore[assignment]
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    httpd.owner = server  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(routes: dict[str, Route], **kwargs: Any) -> Server:
        s = _serve(routes, **kwargs)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop.set()
        s.httpd.shutdown()
        s.httpd.server_close()


# --- canned routes ----------------------------------------------------------------


def html_page(title: str, body: str) -> Route:
    doc = f"<!doctype html><html><head><title>{title}</title><style>p {{color: red}}</style>" \
          f"<script>alert('x')</script></head><body>{body}</body></html>"

    def route(h: Handler) -> None:
        h.send_text(200, doc, "text/html; charset=utf-8")

    return route


def static(data: bytes | str, ctype: str, status: int = 200) -> Route:
    def route(h: Handler) -> None:
        h.send_text(status, data, ctype)

    return route


def redirect_to(location: str | Callable[[Handler], str], status: int = 302) -> Route:
    def route(h: Handler) -> None:
        h.redirect(location(h) if callable(location) else location, status)

    return route


def endless(chunk: bytes, ctype: str = "text/plain") -> Route:
    """Chunked body that never ends on its own: the client must stop reading."""

    def route(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            while not h.owner.stop.is_set():
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            return  # the client hung up, as it should

    return route


def trickle(ctype: str = "text/plain") -> Route:
    """Headers at once, then one byte every 50 ms, forever."""

    def route(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            while not h.owner.stop.is_set():
                h.wfile.write(b"1\r\na\r\n")
                h.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return

    return route


def gzip_bomb(size: int) -> Route:
    payload = gzip.compress(b"a" * size, compresslevel=9)

    def route(h: Handler) -> None:
        h.send_text(200, payload, "text/plain", {"Content-Encoding": "gzip"})

    return route


# --- TLS material for a made-up host name -----------------------------------------


def make_tls(hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context, client context trusting it) for a self-signed ``hostname`` certificate."""
    import datetime
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    with tempfile.TemporaryDirectory() as d:
        cpath, kpath = f"{d}/c.pem", f"{d}/k.pem"
        with open(cpath, "wb") as f:
            f.write(cert_pem)
        with open(kpath, "wb") as f:
            f.write(key_pem)
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cpath, kpath)
        client = ssl.create_default_context(cafile=cpath)
    return server, client

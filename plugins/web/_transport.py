"""An httpx transport that connects only to addresses it has checked.

Why a network backend and not a pre-flight DNS check: checking a name and
then letting httpx resolve it again leaves a window in which the answer can
change (DNS rebinding: first a public address, then 127.0.0.1). Here the
check and the connection use the same resolution: ``connect_tcp`` resolves
the host itself, refuses if *any* address is non-public, and then opens the
socket to one of exactly those addresses. httpcore still believes it talks to
the host name, so the Host header and the TLS SNI/certificate check keep
using the name. Every new connection goes through this, so each redirect hop
(and each retry) is checked again; pooled connections were checked when made.

Proxies are off (``trust_env=False``): through a proxy the socket reaches the
proxy, and the proxy reaches whatever it likes.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio
import httpcore
import httpx

from ._addresses import IPAddress, blocked_reason, canonical_host, numeric_host_problem

__all__ = ["Refused", "Resolver", "VettingBackend", "make_transport", "resolve", "ssl_context", "vet_host"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


class Refused(Exception):
    """A connection WebFetch will not make; ``str()`` is written for the model."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(message)
        self.host = host


async def resolve(host: str, port: int) -> list[str]:
    """All addresses ``host`` resolves to, in the resolver's order."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[str] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        addr = str(sockaddr[0])
        if addr not in out:
            out.append(addr)
    return out


def _unlock_hint(host: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return (
        "WebFetch connects only to public internet addresses. If this host is meant to be reached, "
        f"an operator can add the rule WebFetch(domain:{shown}) to [permissions] allow in the pegboard config; "
        "a bare WebFetch rule or a permissive mode does not unlock it."
    )


async def vet_host(
    host: str, port: int, allowed_hosts: frozenset[str], resolver: Resolver | None = None
) -> list[IPAddress]:
    """Resolve ``host`` and return its addresses if WebFetch may connect to all of them.

    Raises ``Refused``. A host named exactly in ``allowed_hosts`` may resolve
    to anything; every other host must resolve only to public addresses.
    """
    try:
        name = canonical_host(host)
    except ValueError as exc:
        raise Refused(host, f"Refused: {exc}.") from None
    problem = numeric_host_problem(name)
    if problem is not None:
        raise Refused(host, f"Refused: {problem}.")
    try:
        raw = await (resolver or resolve)(name, port)
    except (OSError, UnicodeError) as exc:
        raise Refused(host, f"Could not resolve {name}: {exc}. Check the host name.") from None
    addrs: list[IPAddress] = []
    for text in raw:
        try:
            addrs.append(ipaddress.ip_address(text))
        except ValueError:
            # Fail closed: an answer we cannot classify is not connected to.
            raise Refused(host, f"Refused: {name} resolved to {text!r}, which is not an IP address.") from None
    if not addrs:
        raise Refused(host, f"Could not resolve {name}: no IPv4 or IPv6 address.")
    if name in allowed_hosts:
        return addrs
    for ip in addrs:
        reason = blocked_reason(ip)
        if reason is not None:
            via = "" if str(ip) == name else f" resolves to {ip}, which is"
            raise Refused(host, f"Refused: {name}{via or ' is'} {reason}. {_unlock_hint(name)}")
    return addrs


class VettingBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check every address, connect to a checked address."""

    def __init__(
        self,
        allowed_hosts: frozenset[str],
        resolver: Resolver | None = None,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self.allowed_hosts = allowed_hosts
        self.resolver = resolver
        self.inner = inner or httpcore.AnyIOBackend()
        self.connected: list[tuple[str, str, int]] = []  # (host, address, port), for tests and diagnostics

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addrs = await vet_host(host, port, self.allowed_hosts, self.resolver)
        last: Exception | None = None
        for ip in addrs:
            try:
                stream = await self.inner.connect_tcp(
                    str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
                continue
            self.connected.append((host, str(ip), port))
            return stream
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise Refused(path, "Refused: WebFetch does not connect to Unix sockets.")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


_default_ssl: ssl.SSLContext | None = None


def ssl_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    """The verifying context, built once per process: loading the CA bundle
    costs more than a whole loopback fetch, and the context is only read."""
    global _default_ssl
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        return httpx.create_ssl_context(verify=False)
    if _default_ssl is None:
        # SSL_CERT_FILE / SSL_CERT_DIR are honoured (corporate CAs); proxies are not.
        _default_ssl = httpx.create_ssl_context(verify=True, trust_env=True)
    return _default_ssl


class _VettedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport with its connection pool swapped for one on ``VettingBackend``.

    httpx has no public knob for the network backend; replacing ``_pool``
    keeps all of httpx's request/response mapping and exception translation.
    ``make_transport`` checks the swap took, and the tests prove that a
    refused address is never connected to, so a future httpx that renames
    the attribute fails loudly instead of silently unguarded.
    """

    def __init__(self, backend: VettingBackend, ssl_context: ssl.SSLContext, limits: httpx.Limits) -> None:
        super().__init__(verify=ssl_context, trust_env=False, limits=limits, retries=0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            network_backend=backend,
        )


def make_transport(backend: VettingBackend, verify: ssl.SSLContext | bool = True) -> httpx.AsyncBaseTransport:
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=2)
    transport = _VettedTransport(backend, ssl_context(verify), limits)
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.AsyncConnectionPool) or getattr(pool, "_network_backend", None) is not backend:
        raise RuntimeError("WebFetch could not install its address-checking transport; refusing to fetch")
    return transport

"""Downloading one page: redirects, size and time caps, address checks.

Redirects are followed by hand rather than by httpx so that every hop is
checked like a fresh URL (scheme, host spelling, HTTPS upgrade) and so that a
hop to another host is reported back instead of followed: permission was
given for one host, not for wherever it points.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from urllib.parse import urljoin

import anyio
import httpx

from ._transport import Refused, Resolver, VettingBackend, make_transport
from ._urls import BadURL, Target, check_url

__all__ = ["CrossHostRedirect", "FetchError", "FetchLimits", "Fetched", "fetch"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """The fetch failed; ``str()`` is the message for the model."""


@dataclass(frozen=True)
class FetchLimits:
    timeout_s: float = 30.0
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    user_agent: str = "pegboard-webfetch/0.1"


@dataclass(frozen=True)
class Fetched:
    url: str  # the final URL, after same-host redirects
    status: int
    reason: str
    content_type: str
    body: bytes
    truncated: bool  # stopped at max_bytes
    hops: tuple[str, ...] = field(default_factory=tuple)  # URLs redirected through


@dataclass(frozen=True)
class CrossHostRedirect:
    from_url: str
    to_url: str
    status: int


async def fetch(
    target: Target,
    *,
    allowed_hosts: frozenset[str],
    limits: FetchLimits,
    resolver: Resolver | None = None,
    verify: ssl.SSLContext | bool = True,
    backend: VettingBackend | None = None,
) -> Fetched | CrossHostRedirect:
    """GET ``target`` within ``limits``. Raises ``FetchError`` with a model-facing message."""
    backend = backend or VettingBackend(allowed_hosts, resolver=resolver)
    transport = make_transport(backend, verify=verify)
    headers = {
        "User-Agent": limits.user_agent,
        "Accept": "text/html, text/markdown;q=0.9, text/plain;q=0.8, application/xhtml+xml;q=0.8, */*;q=0.5",
    }
    try:
        # One deadline for the whole call, redirects and a trickling body
        # included: per-operation timeouts alone would let a server that sends
        # one byte every few seconds hold the call open forever.
        with anyio.fail_after(limits.timeout_s):
            async with httpx.AsyncClient(
                transport=transport,
                headers=headers,
                follow_redirects=False,
                trust_env=False,
                timeout=httpx.Timeout(limits.timeout_s),
            ) as client:
                return await _follow(client, target, limits)
    except TimeoutError:
        raise FetchError(
            f"Timed out: {target.url} did not finish within {limits.timeout_s:g} s (WebFetch's time limit)."
        ) from None
    except Refused as exc:
        raise FetchError(str(exc)) from None
    except httpx.ConnectError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ssl.SSLError) or "SSL" in str(exc) or "CERTIFICATE" in str(exc).upper():
            raise FetchError(f"TLS failed for {target.host}: {exc}. The site's certificate could not be verified.") from None
        raise FetchError(f"Could not connect to {target.authority}: {exc or type(exc).__name__}.") from None
    except httpx.TimeoutException:
        raise FetchError(
            f"Timed out: {target.url} did not answer within {limits.timeout_s:g} s (WebFetch's time limit)."
        ) from None
    except httpx.HTTPError as exc:
        raise FetchError(f"Fetching {target.url} failed: {type(exc).__name__}: {exc}.") from None


async def _follow(client: httpx.AsyncClient, first: Target, limits: FetchLimits) -> Fetched | CrossHostRedirect:
    target = first
    hops: list[str] = []
    for _ in range(limits.max_redirects + 1):
        # Build the request from our own normalised URL and make sure httpx
        # reads the same host from it; a disagreement would mean the check and
        # the connection look at different hosts.
        url = httpx.URL(target.url)
        seen = url.raw_host.decode("ascii", "replace").lower().rstrip(".")
        if seen != target.host:
            raise FetchError(f"Refused: {target.url} is read differently by the HTTP client ({seen!r}).")
        async with client.stream("GET", url) as response:
            if response.status_code in _REDIRECTS and "location" in response.headers:
                location = response.headers["location"]
                try:
                    nxt = check_url(urljoin(target.url, location))
                except BadURL as exc:
                    raise FetchError(f"{target.url} redirected to a URL WebFetch refuses ({location!r}): {exc}") from None
                if nxt.host != target.host:
                    return CrossHostRedirect(target.url, nxt.url, response.status_code)
                hops.append(target.url)
                target = nxt
                continue
            body, truncated = await _read_capped(response, limits.max_bytes)
            return Fetched(
                url=target.url,
                status=response.status_code,
                reason=response.reason_phrase,
                content_type=response.headers.get("content-type", ""),
                body=body,
                truncated=truncated,
                hops=tuple(hops),
            )
    raise FetchError(
        f"Too many redirects: {first.url} redirected more than {limits.max_redirects} times within {first.host}."
    )


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most ``max_bytes`` of the decoded body; True when more was on offer.

    The cap counts decompressed bytes, so a small gzip bomb cannot grow past it.
    """
    length = response.headers.get("content-length")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = max_bytes - size
        if len(chunk) >= room:
            chunks.append(chunk[:room])
            size += room
            # Exactly at the cap with nothing more to come is not a truncation;
            # we cannot know without reading on, so ask the length header.
            exact = len(chunk) == room and length is not None and length.isdigit() and int(length) == max_bytes
            return b"".join(chunks), not exact
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False

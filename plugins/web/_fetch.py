"""Downloading one page: redirects, size and time caps, address checks.

Redirects are followed by hand rather than by httpx so that every hop is
checked like a fresh URL (scheme, host spelling, HTTPS upgrade) and so that a
hop to another host is reported back instead of followed: permission was
given for one host, not for wherever it points.
"""

from __future__ import annotations

import ssl
import zlib
from collections.abc import Iterable, Iterator
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
        "Accept-Encoding": ACCEPTED_CODINGS,
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


# The content codings WebFetch asks for and decodes itself, in bounded steps:
# httpx would decode every listed layer of a chunk whole before a byte count
# saw anything, so ``Content-Encoding: gzip, gzip`` (a gzip bomb in a gzip)
# inflated the inner layer, up to gigabytes, from a reply of a few kilobytes.
ACCEPTED_CODINGS = "gzip, deflate"
_STEP = 65_536  # decoded bytes produced at a time


class _Inflater:
    """One gzip or deflate layer, producing at most ``_STEP`` bytes per step."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib: zlib._Decompress | None = None
        self._pending = b""  # input not yet given to the decompressor
        self._members = 0  # gzip members (or deflate streams) started
        self._done = False
        self._tried_raw = False

    def _start(self, head: bytes) -> zlib._Decompress:
        if self.coding == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        # "deflate" is meant to be zlib-wrapped, but some servers send raw
        # deflate: a zlib header is two bytes whose big-endian value is a
        # multiple of 31, with method 8.
        wrapped = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)

    def feed(self, data: bytes) -> None:
        if not self._done:
            self._pending += data

    def steps(self) -> Iterator[bytes]:
        """Decoded output of what was fed so far, a step at a time."""
        while self._pending and not self._done:
            if self._zlib is None:
                if len(self._pending) < 2:
                    return  # wait for the two bytes that say what follows
                if self._members and (self.coding != "gzip" or self._pending[:2] != b"\x1f\x8b"):
                    # What follows the compressed data is ignored, as httpx did.
                    self._done, self._pending = True, b""
                    return
                self._zlib = self._start(self._pending)
                self._members += 1
            data, self._pending = self._pending, b""
            d = self._zlib
            try:
                out = d.decompress(data, _STEP)
            except zlib.error:
                if self.coding != "deflate" or self._tried_raw:
                    raise
                # Raw deflate that happened to look like a zlib header: as
                # httpx did, try it raw once.
                self._tried_raw = True
                d = self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                out = d.decompress(data, _STEP)
            self._tried_raw = True  # only the first input may be retried: later, output was already given
            while True:
                if out:
                    yield out
                if d.eof:
                    # A gzip body may be several members one after another.
                    self._zlib = None
                    self._pending = d.unused_data + self._pending
                    break
                if not d.unconsumed_tail:
                    break
                out = d.decompress(d.unconsumed_tail, _STEP)


def _codings(response: httpx.Response) -> list[str]:
    listed = [c.strip().lower() for c in response.headers.get_list("content-encoding", split_commas=True)]
    return [c for c in listed if c and c != "identity"]


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most ``max_bytes`` of the decoded body; True when more was on offer.

    The cap counts decoded bytes, and decoding stops there: the raw body is
    read as it comes and inflated a step at a time, so a small gzip bomb
    cannot grow past the cap (plus one step). More than one content coding is
    refused: no real site stacks them, and a bomb inside a bomb is what they
    are for.
    """
    codings = _codings(response)
    url = response.request.url
    if len(codings) > 1:
        raise FetchError(
            f"Refused: {url} was sent with {len(codings)} content codings stacked ({', '.join(codings)}). "
            "WebFetch decodes one (gzip or deflate), in bounded steps; a stack of them is how a small reply "
            "unpacks into gigabytes."
        )
    if codings and codings[0] not in ("gzip", "deflate", "x-gzip"):
        raise FetchError(
            f"{url} was sent with the content coding {codings[0]!r}, which WebFetch did not ask for "
            f"(it accepts {ACCEPTED_CODINGS}) and does not decode."
        )
    inflater = _Inflater("gzip" if codings and codings[0] == "x-gzip" else codings[0]) if codings else None
    body = bytearray()
    try:
        async for raw in response.aiter_raw():
            if inflater is None:
                steps: Iterable[bytes] = (raw,)
            else:
                inflater.feed(raw)
                steps = inflater.steps()
            for step in steps:
                room = max_bytes - len(body)
                if len(step) > room:
                    # One byte past the cap tells a cut body from one that fits exactly.
                    body += step[:room]
                    return bytes(body), True
                body += step
    except zlib.error as exc:
        raise FetchError(f"{url} sent a body that is not valid {codings[0]} ({exc}).") from None
    return bytes(body), False

"""Checking and normalising the URLs WebFetch is given. Stdlib only.

The permission vote, the rule matcher and the fetcher all read a URL through
``check_url`` so that they agree on which host a URL names; a URL that two
parsers could read differently (backslashes, spaces, credentials) is refused
rather than interpreted.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ._addresses import canonical_host, ip_literal, is_loopback_host, numeric_host_problem

__all__ = ["BadURL", "Target", "check_url", "checked_url", "host_of", "request_host"]

MAX_URL_CHARS = 8000


class BadURL(ValueError):
    """The URL is refused; the message says why, in words the model can act on."""


@dataclass(frozen=True)
class Target:
    """A checked URL: what to request and which host it names."""

    url: str
    scheme: str
    host: str  # canonical: lower-case, punycode, IPv6 without brackets
    port: int | None
    upgraded: bool  # http was rewritten to https

    @property
    def authority(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return h if self.port is None else f"{h}:{self.port}"


def _bad_char(url: str) -> str | None:
    # Printable ASCII (0x20-0x7E) holds no control, invisible or space
    # character but the space itself: one C-level test for nearly every URL.
    if url.isascii() and url.isprintable() and " " not in url and "\\" not in url:
        return None
    for ch in url:
        if ch == "\\":
            return "a backslash"
        if ch.isspace():
            return "whitespace"
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Zl", "Zp", "Zs"):
            return f"the control or invisible character U+{ord(ch):04X}"
    return None


def check_url(url: str, *, upgrade: bool = True) -> Target:
    """Validate ``url``; with ``upgrade``, http becomes https except for loopback hosts."""
    if not url:
        raise BadURL("The URL is empty.")
    if len(url) > MAX_URL_CHARS:
        raise BadURL(f"The URL is longer than {MAX_URL_CHARS} characters.")
    bad = _bad_char(url)
    if bad is not None:
        raise BadURL(f"The URL contains {bad}; percent-encode it or remove it.")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BadURL(f"The URL does not parse: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise BadURL(f"Only http and https URLs can be fetched, not {parts.scheme or 'a URL without a scheme'!r}.")
    netloc = parts.netloc
    if not netloc:
        raise BadURL("The URL has no host; write it as https://host/path.")
    if "@" in netloc:
        raise BadURL("URLs with a user name or password (user@host) are refused.")
    raw_host = parts.hostname  # lower-cased, brackets stripped
    if raw_host is None or not raw_host:
        raise BadURL("The URL has no host; write it as https://host/path.")
    if "[" in netloc and ip_literal(raw_host) is None:
        raise BadURL("The URL's bracketed host is not an IPv6 address.")
    if "%" in raw_host:
        raise BadURL("Percent-encoded or zone-scoped hosts are refused.")
    problem = numeric_host_problem(raw_host)
    if problem is not None:
        raise BadURL(problem[0].upper() + problem[1:] + ".")
    try:
        host = canonical_host(raw_host)
        port = parts.port
    except ValueError as exc:
        raise BadURL(f"The URL's host or port is invalid: {exc}.") from None
    # Again on the canonical form: IDNA mapping turns full-width digits and
    # ideographic dots into ASCII, so "１２７.１" only shows its shape now.
    problem = numeric_host_problem(host)
    if problem is not None:
        raise BadURL(problem[0].upper() + problem[1:] + ".")
    if port == 0:
        raise BadURL("Port 0 cannot be fetched.")
    upgraded = False
    if upgrade and scheme == "http" and not is_loopback_host(host):
        scheme, upgraded = "https", True
        if port == 80:
            port = None
    if (scheme, port) in (("http", 80), ("https", 443)):
        port = None
    target = Target(url="", scheme=scheme, host=host, port=port, upgraded=upgraded)
    path = parts.path or "/"
    # The fragment never reaches the server; dropping it also makes the cache
    # key the same for #a and #b.
    text = urlunsplit((scheme, target.authority, path, parts.query, ""))
    return Target(url=text, scheme=scheme, host=host, port=port, upgraded=upgraded)


_MEMO = "pegboard.web.urls"  # the key of this plugin's memo in PermissionRequest.extra


def checked_url(url: str, extra: object = None) -> Target | BadURL:
    """``check_url(url, upgrade=False)``, or the ``BadURL`` it raised (returned, not raised).

    ``extra`` is a permission request's ``extra`` dict, which lives for one
    decision: the result is remembered there by the raw URL, so the vote and
    every ``WebFetch(domain:...)`` rule read the URL once between them. The
    host does not depend on ``upgrade`` (it only rewrites scheme and port),
    so callers that want the host may share this form.
    """
    memo = None
    if isinstance(extra, dict):
        memo = extra.get(_MEMO)
        if not isinstance(memo, dict):
            memo = extra[_MEMO] = {}
        hit = memo.get(url)
        if hit is not None:
            return hit
    try:
        result: Target | BadURL = check_url(url, upgrade=False)
    except BadURL as exc:
        result = exc.with_traceback(None)  # kept in the memo: no frames (and no cycle through extra)
    if memo is not None:
        memo[url] = result
    return result


def request_host(request: object) -> str | None:
    """The canonical host of a request's ``url`` input, or None (no string URL, or a refused one)."""
    url = request.input.get("url")  # type: ignore[attr-defined]
    if not isinstance(url, str):
        return None
    target = checked_url(url, getattr(request, "extra", None))
    return target.host if isinstance(target, Target) else None


def host_of(url: str) -> str | None:
    """The canonical host of a URL WebFetch would accept, or None."""
    try:
        return check_url(url, upgrade=False).host
    except BadURL:
        return None

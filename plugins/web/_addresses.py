"""Which IP addresses WebFetch may connect to, and how hosts are spelled.

Stdlib only: the permission vote and the rule matcher use this module, and
they run for every call, so it must not pull in httpx.

The address table is explicit rather than delegated to ``ipaddress``'s
``is_private``/``is_global``: those flags changed between CPython patch
releases (3.11.7 still treats some IPv4-mapped and NAT64 forms loosely), and
an SSRF filter must not depend on which patch release runs it. ``is_global``
is still consulted last, as a second opinion that can only refuse more.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Union

__all__ = [
    "IPAddress",
    "blocked_reason",
    "canonical_host",
    "ip_literal",
    "is_loopback_host",
    "numeric_host_problem",
]

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Order matters only for the wording of the reason: the first match names it.
_BLOCKED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("169.254.169.254/32"), "a cloud metadata address"),
    (_V4("0.0.0.0/8"), "an unspecified ('this network') address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("100.64.0.0/10"), "a carrier-grade NAT (shared) address"),
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V4("192.0.0.0/24"), "an IETF protocol address"),
    (_V4("192.0.2.0/24"), "a documentation address"),
    (_V4("198.51.100.0/24"), "a documentation address"),
    (_V4("203.0.113.0/24"), "a documentation address"),
    (_V4("192.88.99.0/24"), "a 6to4 relay address"),
    (_V4("198.18.0.0/15"), "a benchmarking address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),  # includes 255.255.255.255
)

# IPv6 forms that carry an IPv4 address inside: the embedded address decides
# where the packet really goes (or is meaningless), so these are refused
# outright, whatever they embed. DNS64 networks hand out 64:ff9b::/96 for
# every IPv4-only site; refusing NAT64 there is the price of failing closed,
# and an operator can still name a host in an allow rule.
_TUNNEL_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::ffff:0:0/96"), "an IPv4-mapped IPv6 address"),
    (_V6("::ffff:0:0:0/96"), "an IPv4-translated IPv6 address"),
    (_V6("64:ff9b::/96"), "a NAT64 IPv6 address"),
    (_V6("64:ff9b:1::/48"), "a local-use NAT64 IPv6 address"),
    (_V6("2002::/16"), "a 6to4 IPv6 address"),
    (_V6("2001::/32"), "a Teredo IPv6 address"),
)

_BLOCKED_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("fd00:ec2::254/128"), "a cloud metadata address"),
    (_V6("::/128"), "the unspecified address"),
    (_V6("::1/128"), "a loopback address"),
    (_V6("::/96"), "an IPv4-compatible IPv6 address"),
    *_TUNNEL_V6,
    (_V6("100::/64"), "a discard-only address"),
    (_V6("2001::/23"), "an IETF protocol address"),
    (_V6("2001:db8::/32"), "a documentation address"),
    (_V6("3fff::/20"), "a documentation address"),
    (_V6("fc00::/7"), "a unique-local (private) address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V6("fec0::/10"), "a site-local address"),
    (_V6("ff00::/8"), "a multicast address"),
)

# Only global unicast space is ever routed on the public internet; anything
# outside 2000::/3 is reserved or special, so it is refused by default.
_GLOBAL_UNICAST_V6 = _V6("2000::/3")


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public internet address, or None when it is."""
    if isinstance(ip, ipaddress.IPv4Address):
        for net, why in _BLOCKED_V4:
            if ip in net:
                return why
        if not ip.is_global:
            return "a reserved address"
        return None
    if ip.scope_id:
        return "a scoped (link-local) address"
    for net6, why in _BLOCKED_V6:
        if ip in net6:
            return why
    if ip not in _GLOBAL_UNICAST_V6:
        return "a reserved IPv6 address"
    if not ip.is_global:
        return "a reserved address"
    return None


def ip_literal(host: str) -> IPAddress | None:
    """The address when ``host`` is a canonical IP literal (brackets allowed), else None."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    # An IPv6 literal has colons and an IPv4 one ends with a digit: names
    # (nearly every host) are told apart without two failed parses.
    if ":" not in text and not "0" <= text[-1:] <= "9":
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


_NUMERIC_LABEL = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")


def numeric_host_problem(host: str) -> str | None:
    """Refuse hosts that browsers would read as an IPv4 address in an odd spelling.

    WHATWG URL parsing treats a host whose last label is a number (``2130706433``,
    ``0x7f000001``, ``0177.0.0.1``, ``127.1``) as IPv4, and so does
    ``getaddrinfo`` through ``inet_aton``. Such spellings exist mainly to slip
    past filters, so only the canonical dotted quad is accepted.
    """
    bare = host.rstrip(".")
    if not bare or ":" in bare:
        return None
    last = bare.rsplit(".", 1)[-1]
    if not _NUMERIC_LABEL.match(last):
        return None
    if bare != host:
        return f"{host!r} ends with a dot after a numeric address; write the address as a plain dotted quad"
    try:
        ipaddress.IPv4Address(bare)  # rejects leading zeros, short forms and hex
    except ValueError:
        return (
            f"{host!r} is an IPv4 address in a non-standard spelling (decimal, octal, hex or shortened); "
            "only the plain dotted form such as 93.184.215.14 is accepted"
        )
    return None


def canonical_host(host: str) -> str:
    """Lower-case, without brackets or one trailing dot, IDNA (punycode) encoded.

    Rules and URLs are both reduced to this form before they are compared, so
    ``Example.COM.`` and ``example.com`` are the same host. ``ValueError``
    when the name cannot be encoded.
    """
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        ip6 = ip_literal(h)
        if ip6 is None:
            raise ValueError(f"{host!r} is not a valid IPv6 address")
        return str(ip6)
    if h.endswith("."):
        h = h[:-1]
    if not h:
        raise ValueError("empty host name")
    ip = ip_literal(h)
    if ip is not None:
        return str(ip)
    if h.isascii():
        h = h.lower()
    else:
        h = _idna_encode(h)
        mapped = ip_literal(h)  # full-width digits can map onto an IP literal
        if mapped is not None:
            return str(mapped)
    if not all(label and len(label) <= 63 for label in h.split(".")):
        raise ValueError(f"{host!r} is not a valid host name")
    if not re.fullmatch(r"[a-z0-9_.\-]+", h):
        raise ValueError(f"{host!r} contains characters a host name cannot have")
    return h


def _idna_encode(host: str) -> str:
    # httpx encodes with the ``idna`` package (IDNA 2008); use it too when it
    # is installed so that rules and connections agree on the spelling.
    try:
        import idna
    except ImportError:  # pragma: no cover - idna ships with httpx
        try:
            return host.encode("idna").decode("ascii").lower()
        except UnicodeError as exc:
            raise ValueError(f"{host!r} is not a valid international host name") from exc
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError as exc:
        raise ValueError(f"{host!r} is not a valid international host name: {exc}") from exc


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` names and loopback literals (no DNS involved)."""
    h = host.lower().rstrip(".")
    if h == "localhost" or h.endswith(".localhost"):
        return True
    ip = ip_literal(h)
    return ip is not None and ip.is_loopback

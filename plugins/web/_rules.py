"""``WebFetch(domain:...)`` rules: parsing, matching, and explicit unlocks. Stdlib only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._addresses import canonical_host
from ._urls import host_of

if TYPE_CHECKING:
    from pegboard._decisions import PermissionRequest

__all__ = [
    "DomainMatcher",
    "DomainPattern",
    "explicitly_allowed_hosts",
    "operator_rules",
    "parse_domain_specifier",
]

FETCH_TOOL = "WebFetch"


@dataclass(frozen=True)
class DomainPattern:
    """``example.com`` (that host only) or ``*.example.com`` (its subdomains, not itself)."""

    host: str
    wildcard: bool

    def matches(self, host: str) -> bool:
        # Compared label-wise on the canonical host, never as a string prefix,
        # so example.com.evil.net and notexample.com do not match example.com.
        if not self.wildcard:
            return host == self.host
        return host.endswith("." + self.host)

    @property
    def text(self) -> str:
        return f"domain:*.{self.host}" if self.wildcard else f"domain:{self.host}"


def parse_domain_specifier(spec: str) -> DomainPattern:
    """``domain:host`` or ``domain:*.host``; ``ValueError`` says what is wrong."""
    kind, sep, value = spec.strip().partition(":")
    if not sep or kind.strip() != "domain":
        raise ValueError(f"expected 'domain:<host>' or 'domain:*.<host>', got {spec!r}")
    value = value.strip()
    wildcard = value.startswith("*.")
    if wildcard:
        value = value[2:]
    if not value or any(c in value for c in "*/:@?#\\ ") and not value.startswith("["):
        raise ValueError(
            f"{spec!r}: give a bare host name such as example.com or *.example.com (no scheme, port, path or inner '*')"
        )
    try:
        host = canonical_host(value)
    except ValueError as exc:
        raise ValueError(f"{spec!r}: {exc}") from None
    if wildcard and ":" in host:
        raise ValueError(f"{spec!r}: a wildcard cannot apply to an IP address")
    return DomainPattern(host=host, wildcard=wildcard)


@dataclass(frozen=True)
class DomainMatcher:
    """The compiled form of one ``WebFetch(domain:...)`` rule."""

    pattern: DomainPattern

    def matches(self, request: PermissionRequest) -> bool:
        url = request.input.get("url")
        if not isinstance(url, str):
            return False
        host = host_of(url)
        return host is not None and self.pattern.matches(host)


def explicitly_allowed_hosts(rules: Iterable[Any]) -> frozenset[str]:
    """Hosts named exactly (no wildcard) by an allow rule ``WebFetch(domain:host)``.

    Only these may reach loopback, private and other non-public addresses: a
    bare ``WebFetch`` rule, a wildcard, or a permissive mode is not an
    operator's statement that *this* host is meant to be internal. Anything
    that does not look like a rule is ignored, so a missing or changed core
    accessor unlocks nothing.
    """
    hosts: set[str] = set()
    for rule in rules:
        if getattr(rule, "behavior", None) != "allow" or getattr(rule, "tool", None) != FETCH_TOOL:
            continue
        if _remembered(rule):
            continue
        spec = getattr(rule, "specifier", None)
        if not isinstance(spec, str):
            continue
        try:
            pattern = parse_domain_specifier(spec)
        except ValueError:
            continue
        if not pattern.wildcard:
            hosts.add(pattern.host)
    return frozenset(hosts)


def operator_rules(session: Any) -> list[Any]:
    """The permission rules written in config files, as ``pegboard.Rule`` objects.

    Read from ``session.toolbox.permissions.rules`` (compiled rules carrying
    ``.rule``). Session grants are not in that list, and rules remembered from
    approvals (``granted.toml``) are skipped: a person who clicked "always
    allow evil.example" agreed to that host on the internet, not to whatever
    internal address its DNS may point at later. Anything unexpected yields
    no rules, which unlocks nothing.
    """
    try:
        items = session.toolbox.permissions.rules
        if callable(items):
            items = items()
        items = list(items)
    except Exception:
        return []
    out: list[Any] = []
    for item in items:
        rule = getattr(item, "rule", item)
        if not _remembered(rule):
            out.append(rule)
    return out


def _remembered(rule: Any) -> bool:
    """A rule that came from clicking "always allow" rather than from an operator's config file."""
    source = str(getattr(rule, "source", ""))
    return source.endswith("granted.toml") or source.startswith("session")

"""``WebFetch(domain:...)`` rules: parsing, matching, and explicit unlocks. Stdlib only."""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._addresses import canonical_host
from ._urls import request_host

if TYPE_CHECKING:
    from pegboard import PermissionRequest

__all__ = [
    "DomainMatcher",
    "DomainPattern",
    "explicitly_allowed_hosts",
    "operator_rules",
    "parse_domain_specifier",
    "unlocked_hosts",
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
    # the specifier as written, which a saved rule must name again (the rule cache protocol)
    specifier: str = ""

    def matches(self, request: PermissionRequest) -> bool:
        host = request_host(request)
        return host is not None and self.pattern.matches(host)

    def save(self) -> tuple[str, str, bool]:
        """The specifier and the canonical host it names, as plain data (the
        engine's rule cache protocol): the next process skips parsing and
        canonicalising the host (``restored``)."""
        return (self.specifier, self.pattern.host, self.pattern.wildcard)

    @classmethod
    def restored(cls, specifier: str, saved: Any) -> DomainMatcher:
        """The matcher ``save()`` described, for the rule whose specifier is
        ``specifier``; ``ValueError`` when it describes another."""
        try:
            written, host, wildcard = saved
        except (TypeError, ValueError):
            raise ValueError("not what DomainMatcher.save() gives") from None
        if written != specifier or not isinstance(host, str) or not host or type(wildcard) is not bool:
            raise ValueError("not what DomainMatcher.save() gives for this rule")
        return cls(DomainPattern(host=host, wildcard=wildcard), specifier)

    @classmethod
    def combine(cls, matchers: Sequence[DomainMatcher]) -> CombinedDomains:
        """The engine's optional protocol: many domain rules, one lookup per call."""
        return CombinedDomains(matchers)


class CombinedDomains:
    """``first_match`` over many ``DomainMatcher``: the lowest index among the
    rules that match, exactly as calling each one's ``matches`` would find.

    Exact hosts are a dict lookup. ``*.example.com`` matches when the host
    ends with ``.example.com``, i.e. when the part after one of the host's
    dots is ``example.com``: so the host's suffixes after each dot
    (a.b.example.com: b.example.com, example.com, com) are looked up in a
    dict of wildcard hosts, a handful of lookups whatever the rule count.
    Both sides are canonical hosts, as ``DomainPattern.matches`` compares them.
    """

    __slots__ = ("exact", "wildcard")

    def __init__(self, matchers: Sequence[DomainMatcher]):
        exact: dict[str, int] = {}
        wildcard: dict[str, int] = {}
        for index, matcher in enumerate(matchers):
            # Anything else could match differently: refuse, and the engine asks one by one.
            if type(matcher) is not DomainMatcher or type(matcher.pattern) is not DomainPattern:
                raise TypeError(f"cannot combine {type(matcher).__name__}")
            pattern = matcher.pattern
            if not isinstance(pattern.host, str) or not pattern.host:
                raise ValueError(f"cannot combine a rule on host {pattern.host!r}")
            (wildcard if pattern.wildcard else exact).setdefault(pattern.host, index)
        self.exact = exact
        self.wildcard = wildcard

    def first_match(self, request: PermissionRequest) -> int | None:
        host = request_host(request)
        if host is None:
            return None
        best = self.exact.get(host)
        wildcard = self.wildcard
        if wildcard:
            dot = host.find(".")
            while dot >= 0:
                hit = wildcard.get(host[dot + 1:])
                if hit is not None and (best is None or hit < best):
                    best = hit
                dot = host.find(".", dot + 1)
        return best


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


# The config layers whose rules may unlock non-public addresses: the person's
# own files. A project's config (trusted or not) may allow a host on the
# internet, never reach loopback or the cloud metadata address through it.
PERSON_LAYERS = frozenset({"user", "explicit", "policy"})


def operator_rules(session: Any) -> list[Any]:
    """The ``WebFetch`` allow rules of the person's own config files (the
    user file, ``--config``, the system policy), as ``pegboard.Rule`` objects.

    Asked through the public ``Session.rules_for`` (compiled rules carrying
    ``.rule`` and ``.layer``, the config layer's name). A project's rules are
    left out, and so are session grants and rules remembered from approvals
    (``granted.toml``): a person who clicked "always allow evil.example"
    agreed to that host on the internet, not to whatever internal address its
    DNS may point at later. Anything unexpected yields no rules, which
    unlocks nothing.
    """
    try:
        items = list(session.rules_for("allow", FETCH_TOOL))
    except Exception:
        return []
    out: list[Any] = []
    for item in items:
        rule = getattr(item, "rule", item)
        if getattr(item, "layer", None) in PERSON_LAYERS and not _remembered(rule):
            out.append(rule)
    return out


# Per session: (the sequence of compiled rules it had, their ids, the hosts they unlock).
_UNLOCKED: weakref.WeakKeyDictionary[Any, tuple[object, tuple[int, ...], frozenset[str]]] = \
    weakref.WeakKeyDictionary()


def unlocked_hosts(session: Any) -> frozenset[str]:
    """``explicitly_allowed_hosts(operator_rules(session))``, parsed once per
    set of rules rather than once per call: the vote asks it for every URL
    naming a loopback or other non-public address. Worked out again whenever
    the session's WebFetch allow rules change (a rule or grant added);
    anything unexpected is not cached, and gets ``operator_rules``'s answer.
    """
    try:
        given = session.rules_for("allow", FETCH_TOOL)
        cached = _UNLOCKED.get(session)
        if cached is not None and cached[0] is given:
            # the same sequence: the rules are unchanged (Session.rules_for), nothing to go through
            return cached[2]
        stamp = tuple(id(item) for item in given)
    except Exception:  # not weakly referenceable, or an unexpected session
        return explicitly_allowed_hosts(operator_rules(session))
    if cached is not None and cached[1] == stamp:
        hosts = cached[2]
    else:
        hosts = explicitly_allowed_hosts(operator_rules(session))
    try:
        _UNLOCKED[session] = (given, stamp, hosts)
    except TypeError:
        pass  # not weakly referenceable: answered, not remembered
    return hosts


def _remembered(rule: Any) -> bool:
    """A rule that came from clicking "always allow" rather than from an operator's config file."""
    source = str(getattr(rule, "source", ""))
    return source.endswith("granted.toml") or source.startswith("session")

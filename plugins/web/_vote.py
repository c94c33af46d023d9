"""The WebFetch permission vote. Stdlib and pegboard only: it runs for every WebFetch decision."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pegboard import Vote

from ._addresses import blocked_reason, ip_literal
from ._rules import unlocked_hosts
from ._urls import BadURL, checked_url

if TYPE_CHECKING:
    from pegboard import PermissionRequest

__all__ = ["fetch_vote"]


def _rule_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def fetch_vote(request: PermissionRequest) -> Vote:
    url = request.input.get("url")
    if not isinstance(url, str):
        return Vote.deny("WebFetch needs a url string")
    # Read once per decision: the domain rules share it through request.extra.
    target = checked_url(url, request.extra)
    if isinstance(target, BadURL):
        return Vote.deny(f"WebFetch refuses this URL: {target}")
    # Addresses written into the URL can be judged without DNS: refuse them
    # here so the person is not asked about a call that could never run.
    # Names are judged at connect time, on what they resolve to.
    ip = ip_literal(target.host)
    if ip is not None or target.host == "localhost" or target.host.endswith(".localhost"):
        reason = blocked_reason(ip) if ip is not None else "a loopback name"
        # The hosts explicit allow rules unlock, worked out once per rule set, not per call.
        if reason is not None and target.host not in unlocked_hosts(request.session):
            rule = f"WebFetch(domain:{_rule_host(target.host)})"
            return Vote.deny(
                f"WebFetch refuses {target.host}: it is {reason}, and only an operator's allow rule {rule} "
                "in the config can open it (a bare WebFetch rule or a permissive mode does not)"
            )
    return Vote.ask(
        f"WebFetch wants to read {target.host}",
        suggest=(f"WebFetch(domain:{_rule_host(target.host)})",),
    )

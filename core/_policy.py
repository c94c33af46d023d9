"""One model that both permission vocabularies map onto.

A ``Policy`` says which tools are offered, what runs without asking, and what
happens to everything else. Claude Code's modes and meka's levels are names
for particular policies; see docs/permissions.md for the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._levels import LEVELS, Level

__all__ = ["MODES", "POLICY_NAMES", "Policy", "clamp_policy", "policy_for"]

AutoAllow = Literal["nothing", "reads_inside", "reads_anywhere", "edits_inside", "everything"]
Beyond = Literal["ask", "deny", "classifier"]

MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
POLICY_NAMES = (*MODES, "none", "read", "workspace", "unrestricted", "ask")


@dataclass(frozen=True)
class Policy:
    """What a mode or level means.

    ``offers``: the highest tool level offered (tools above it are absent from
    the catalogue). ``read_only_tools``: only read-only tools are offered.
    ``auto_allow``: what runs without asking. ``beyond``: what happens to the
    rest. ``bypass``: deny rules and protected paths are the only stops.
    ``ask_every_call``: every call asks, and an approved call is not confined.
    """

    name: str
    offers: Level
    read_only_tools: bool
    auto_allow: AutoAllow
    beyond: Beyond
    bypass: bool = False
    ask_every_call: bool = False

    @property
    def is_level(self) -> bool:
        return self.name in LEVELS or self.name == "ask"

    def offers_tool(self, required: Level, read_only: bool) -> bool:
        if self.offers == "none":
            return False
        if self.read_only_tools and not read_only:
            return False
        return LEVELS.index(required) <= LEVELS.index(self.offers)

    def allows_reads(self, inside: bool) -> bool:
        if self.auto_allow in ("reads_anywhere", "everything"):
            return True
        return inside and self.auto_allow in ("reads_inside", "edits_inside")

    def allows_edits(self, inside: bool) -> bool:
        if self.auto_allow == "everything":
            return True
        return inside and self.auto_allow == "edits_inside"


_POLICIES: dict[str, Policy] = {
    "default": Policy("default", "unrestricted", False, "reads_inside", "ask"),
    "acceptEdits": Policy("acceptEdits", "unrestricted", False, "edits_inside", "ask"),
    "plan": Policy("plan", "unrestricted", True, "reads_inside", "ask"),
    "auto": Policy("auto", "unrestricted", False, "edits_inside", "classifier"),
    "dontAsk": Policy("dontAsk", "unrestricted", False, "reads_inside", "deny"),
    "bypassPermissions": Policy("bypassPermissions", "unrestricted", False, "everything", "deny", bypass=True),
    "none": Policy("none", "none", False, "nothing", "deny"),
    "read": Policy("read", "read", False, "reads_anywhere", "deny"),
    "workspace": Policy("workspace", "workspace", False, "edits_inside", "deny"),
    "unrestricted": Policy("unrestricted", "unrestricted", False, "everything", "deny", bypass=True),
    "ask": Policy("ask", "unrestricted", False, "nothing", "ask", ask_every_call=True),
}


def policy_for(name: str) -> Policy:
    """The policy for a mode or level name; ``ValueError`` names the choices."""
    try:
        return _POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown mode or level {name!r}; expected one of: {', '.join(POLICY_NAMES)}") from None


# How wide each policy is, for clamping a child to its parent. Policies in
# different chains are incomparable: asking for one under the other yields
# the parent's own.
_WIDTH = {
    "none": 0, "plan": 1, "read": 1, "dontAsk": 2, "default": 3, "auto": 3,
    "workspace": 3, "acceptEdits": 4, "ask": 4, "unrestricted": 5, "bypassPermissions": 5,
}
_INCOMPARABLE = {frozenset({"workspace", "ask"})}


def clamp_policy(requested: str, parent: str) -> Policy:
    """The policy a sub-agent gets when it asks for ``requested`` under ``parent``.

    A child is never wider than its parent: a wider request yields the parent's
    own policy, and so does a request incomparable with the parent's
    (``workspace`` under ``ask`` and the reverse).
    """
    child, mother = policy_for(requested), policy_for(parent)
    if frozenset({child.name, mother.name}) in _INCOMPARABLE:
        return mother
    if _narrower_or_equal(child, mother):
        return child
    return mother


def _narrower_or_equal(child: Policy, parent: Policy) -> bool:
    if child.name == parent.name:
        return True
    if LEVELS.index(child.offers) > LEVELS.index(parent.offers):
        return False
    if parent.read_only_tools and not child.read_only_tools:
        return False
    if _WIDTH[child.name] > _WIDTH[parent.name]:
        return False
    # A child may not ask where the parent denies, nor classify where it asks.
    rank = {"deny": 0, "classifier": 1, "ask": 2}
    if parent.beyond == "deny" and rank[child.beyond] > 0 and child.auto_allow != "nothing":
        return False
    return _WIDTH[child.name] < _WIDTH[parent.name] or child.name == parent.name

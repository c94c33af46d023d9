"""One model that both permission vocabularies map onto.

A ``Policy`` says which tools are offered, what runs without asking, and what
happens to everything else. Claude Code's modes (default, acceptEdits, plan,
auto, dontAsk, bypassPermissions) and meka's levels (none, read, workspace,
unrestricted, ask) are names for particular policies; docs/permissions.md
has the table, and ``clamp_policy`` orders them for sub-agents.

The fields are independent dimensions, each ordered from narrow to wide, so
that "is this policy narrower than that one" is a question about fields, not
about names (``narrower_or_equal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .levels import LEVELS, Level

__all__ = [
    "LEVEL_NAMES",
    "MODES",
    "POLICY_NAMES",
    "OnAsk",
    "Policy",
    "Reach",
    "clamp_policy",
    "narrower_or_equal",
    "policy_for",
]

Reach = Literal["nowhere", "inside", "anywhere"]
"""Where something runs without asking: nowhere, inside the working dirs, anywhere."""

OnAsk = Literal["deny", "allow_read_only", "ask", "classifier", "allow"]
"""What becomes of a call nobody has settled (a plugin's non-firm ask, or a
changing tool without a vote): ``ask`` a person; ``classifier`` first, then a
person; ``deny``; ``allow``; ``allow_read_only``: run it if the tool is
read-only, else deny (the levels: no one is there to ask, and a read-only
tool cannot change anything)."""

MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
LEVEL_NAMES = ("none", "read", "workspace", "unrestricted", "ask")
POLICY_NAMES = (*MODES, *LEVEL_NAMES)

_REACH_RANK: dict[str, int] = {"nowhere": 0, "inside": 1, "anywhere": 2}


@dataclass(frozen=True, slots=True)
class Policy:
    """What a mode or level means: ``request.policy`` in a vote,
    ``session.policy`` elsewhere. A plugin consults ``allows_reads`` and
    ``allows_edits`` (or lets ``PermissionRequest.path_vote`` do it).
    """

    name: str
    """The mode (``default``, ``acceptEdits``, ``plan``, ``auto``, ``dontAsk``,
    ``bypassPermissions``) or level (``none``, ``read``, ``workspace``, ``unrestricted``, ``ask``)."""
    offers: Level
    """The highest tool level offered: a tool whose ``permission`` is above it is not offered."""
    read_only_tools: bool
    """Only read-only tools are offered (plan)."""
    reads: Reach
    """Where reads run without asking: ``nowhere``, ``inside`` the working dirs, ``anywhere``."""
    edits: Reach
    """Where edits and file commands run without asking."""
    confines_writes: bool
    """A write beyond ``edits`` is denied, not asked (the levels)."""
    prompts: bool
    """A person can be asked: an ask rule or a protected path asks rather than denies."""
    on_ask: OnAsk
    """What a call nobody settled becomes (see ``OnAsk``)."""
    bypass: bool = False
    """The policy ``disable_bypass_permissions`` switches off; a firm ask (protected path) denies in it."""
    ask_every_call: bool = False
    """Every call asks, and an approved call is not confined (the ``ask`` level)."""

    @property
    def is_level(self) -> bool:
        """A level (``none``, ``read``, ``workspace``, ``unrestricted``, ``ask``), not a mode."""
        return self.name in LEVEL_NAMES

    @property
    def kind(self) -> str:
        """"level" or "mode", for messages."""
        return "level" if self.is_level else "mode"

    def offers_tool(self, required: Level, read_only: bool) -> bool:
        """Whether a tool needing level ``required`` (read-only or not) is offered under this policy."""
        if self.offers == "none":
            return False
        if self.read_only_tools and not read_only:
            return False
        return LEVELS.index(required) <= LEVELS.index(self.offers)

    def allows_reads(self, inside: bool) -> bool:
        """Whether a read (inside the working dirs, or not) runs without asking."""
        return _reaches(self.reads, inside)

    def allows_edits(self, inside: bool) -> bool:
        """Whether an edit or file command (inside, or not) runs without asking."""
        return _reaches(self.edits, inside)


def _reaches(reach: Reach, inside: bool) -> bool:
    return reach == "anywhere" or (inside and reach == "inside")


def _p(name: str, offers: Level, reads: Reach, edits: Reach, on_ask: OnAsk, *, prompts: bool,
       read_only_tools: bool = False, confines_writes: bool = False, bypass: bool = False,
       ask_every_call: bool = False) -> Policy:
    return Policy(name, offers, read_only_tools, reads, edits, confines_writes, prompts, on_ask, bypass,
                  ask_every_call)


# The table docs/permissions.md reproduces; test_policy checks they agree.
_POLICIES: dict[str, Policy] = {p.name: p for p in (
    _p("default", "unrestricted", "inside", "nowhere", "ask", prompts=True),
    _p("acceptEdits", "unrestricted", "inside", "inside", "ask", prompts=True),
    _p("plan", "unrestricted", "inside", "nowhere", "ask", prompts=True, read_only_tools=True),
    # Without a pegboard_classify implementation, "classifier" falls through to
    # the person: auto is then default exactly.
    _p("auto", "unrestricted", "inside", "nowhere", "classifier", prompts=True),
    _p("dontAsk", "unrestricted", "inside", "nowhere", "deny", prompts=False),
    _p("bypassPermissions", "unrestricted", "anywhere", "anywhere", "allow", prompts=True, bypass=True),
    _p("none", "none", "nowhere", "nowhere", "deny", prompts=False, confines_writes=True),
    _p("read", "read", "anywhere", "nowhere", "allow_read_only", prompts=False, confines_writes=True),
    _p("workspace", "workspace", "anywhere", "inside", "allow_read_only", prompts=False, confines_writes=True),
    _p("unrestricted", "unrestricted", "anywhere", "anywhere", "allow", prompts=False, bypass=True),
    _p("ask", "unrestricted", "nowhere", "nowhere", "ask", prompts=True, ask_every_call=True),
)}


def policy_for(name: str) -> Policy:
    """The policy for a mode or level name; ``ValueError`` names the choices."""
    try:
        return _POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown mode or level {name!r}; expected one of: {', '.join(POLICY_NAMES)}") from None


# --- ordering ---------------------------------------------------------------------
#
# Width is what a policy lets happen without a person approving it: the tools
# it offers, and the calls that run unattended. Asking a person is never
# counted as wider than denying (the person may refuse; asking is where every
# policy falls back to), so a policy that asks where another denies is not
# wider for it. Each dimension is ranked narrow to wide, and a policy is
# narrower or equal to another when it is so in every component (a product
# order). Components that pull in opposite directions make two policies
# incomparable: workspace writes inside the working dirs unattended where ask
# prompts, but ask offers tools workspace does not.

# What becomes of an unsettled call, as (for read-only tools, for the others):
# deny and ask let nothing run unattended; a classifier may; allow does.
_ON_ASK_RANK: dict[str, tuple[int, int]] = {
    "deny": (0, 0),
    "ask": (0, 0),
    "classifier": (1, 1),
    "allow_read_only": (2, 0),
    "allow": (2, 2),
}


def _dimensions(p: Policy) -> tuple[int, ...]:
    if p.offers == "none":
        return (0,) * 8  # offers nothing, so nothing else it says can happen: the bottom
    # A changing tool no plugin voted on: the levels run it (its declared
    # level is the permission), the modes settle it like an ask.
    unvoted = 2 if p.on_ask == "allow_read_only" else _ON_ASK_RANK[p.on_ask][1]
    return (
        LEVELS.index(p.offers),            # tools up to this level...
        0 if p.read_only_tools else 1,     # ...and not only the read-only ones
        0 if p.ask_every_call else _REACH_RANK[p.reads],
        0 if p.ask_every_call else _REACH_RANK[p.edits],
        0 if p.ask_every_call else 1,      # read-only tools without a vote run
        *_ON_ASK_RANK[p.on_ask],
        unvoted,
    )


def narrower_or_equal(child: Policy, parent: Policy) -> bool:
    """Whether ``child`` lets nothing happen that ``parent`` would not let
    happen at least as narrowly (component-wise on every dimension)."""
    return all(c <= p for c, p in zip(_dimensions(child), _dimensions(parent), strict=True))


def clamp_policy(requested: str, parent: str) -> Policy:
    """The policy a sub-agent gets when it asks for ``requested`` under ``parent``.

    A child is never wider than its parent: a request narrower than or equal
    to the parent's policy is granted; a wider one, or one incomparable with
    the parent's (``workspace`` under ``ask`` and the reverse), yields the
    parent's own policy rather than either. ``ValueError`` for unknown names.
    """
    child, mother = policy_for(requested), policy_for(parent)
    return child if narrower_or_equal(child, mother) else mother


def policy_table() -> list[str]:
    """The mapping tables of docs/permissions.md (the modes', then the
    levels'), one Markdown row per policy; the tests check the docs' tables
    against it (with the names there linked to the glossary)."""
    unsettled = {"ask": "asks a person", "classifier": "classifier, then a person", "deny": "denied",
                 "allow": "runs", "allow_read_only": "runs if the tool is read-only, else denied"}
    rows: list[str] = []
    for name in POLICY_NAMES:
        p = _POLICIES[name]
        if name in (MODES[0], LEVEL_NAMES[0]):  # each vocabulary's table starts with its header
            rows += [f"| {p.kind} | tools offered | reads unasked | edits unasked | a write beyond | "
                     "ask rules, protected paths | unsettled call |", "|---|---|---|---|---|---|---|"]
        offered = ("none" if p.offers == "none" else "read-only only" if p.read_only_tools
                   else f"up to {p.offers}")
        firm = ("ask rules ask; protected paths denied" if p.bypass and p.prompts
                else "denied" if not p.prompts else "ask a person")
        reads = "nowhere (every call asks)" if p.ask_every_call else p.reads
        edits = "nowhere (every call asks)" if p.ask_every_call else p.edits
        beyond = "denied" if p.confines_writes else "asks" if p.prompts else "denied"
        if p.edits == "anywhere":
            beyond = "-"
        rows.append(f"| {name} | {offered} | {reads} | {edits} | {beyond} | {firm} | {unsettled[p.on_ask]} |")
    return rows

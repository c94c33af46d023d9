"""The policy model: the two vocabularies, the documented table, and
``clamp_policy`` over every pair, checked against what the engine does."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import re
from pathlib import Path
import pytest
from test_permissions import CALLS, _fill
from test_permissions_plugin import Project, project  # noqa: F401  (fixture)

from pegboard import Decision, PermissionRequest, Vote, clamp_policy, hookimpl, policy_for
from pegboard._api.policy import LEVEL_NAMES, MODES, POLICY_NAMES, narrower_or_equal, policy_table

DOCS = Path(__file__).resolve().parents[4] / "docs" / "permissions.md"
PAIRS = list(itertools.product(POLICY_NAMES, repeat=2))


def test_both_vocabularies_name_policies() -> None:
    assert set(POLICY_NAMES) == set(MODES) | set(LEVEL_NAMES)
    for name in MODES:
        assert policy_for(name).kind == "mode"
    for name in LEVEL_NAMES:
        assert policy_for(name).kind == "level"
    with pytest.raises(ValueError, match="expected one of: default, acceptEdits"):
        policy_for("yolo")


def test_the_documented_table_is_the_code() -> None:
    # the names link to the glossary there: [default](glossary.md#default)
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", DOCS.read_text(encoding="utf-8"))
    for row in policy_table():
        assert row in text, f"docs/permissions.md is missing or has a different row:\n{row}"


def test_auto_differs_from_default_only_by_its_classifier() -> None:
    auto, default = policy_for("auto"), policy_for("default")
    assert auto.on_ask == "classifier" and default.on_ask == "ask"
    assert {k: v for k, v in dataclasses.asdict(auto).items() if k not in ("name", "on_ask")} == \
        {k: v for k, v in dataclasses.asdict(default).items() if k not in ("name", "on_ask")}


# --- the order -------------------------------------------------------------------


def test_the_order_is_a_preorder() -> None:
    policies = [policy_for(n) for n in POLICY_NAMES]
    for p in policies:
        assert narrower_or_equal(p, p)
    for a, b, c in itertools.product(policies, repeat=3):
        if narrower_or_equal(a, b) and narrower_or_equal(b, c):
            assert narrower_or_equal(a, c), (a.name, b.name, c.name)


@pytest.mark.parametrize("requested, parent", PAIRS)
def test_clamp_gives_the_request_or_the_parents_own(requested: str, parent: str) -> None:
    got = clamp_policy(requested, parent)
    if narrower_or_equal(policy_for(requested), policy_for(parent)):
        assert got.name == requested
    else:
        assert got.name == parent


# The pairs the issue and meka name, and the ones a person would check first.
EXPECTED = {
    ("workspace", "ask"): "ask",            # incomparable: the parent's own
    ("ask", "workspace"): "workspace",
    ("read", "workspace"): "read",
    ("workspace", "read"): "read",
    ("unrestricted", "workspace"): "workspace",
    ("none", "ask"): "none",
    ("ask", "unrestricted"): "ask",
    ("read", "ask"): "ask",                 # read runs reads anywhere unasked; ask shows each
    ("plan", "default"): "plan",
    ("default", "plan"): "plan",
    ("acceptEdits", "default"): "default",
    ("default", "acceptEdits"): "default",
    ("auto", "default"): "default",         # a classifier may allow what default shows a person
    ("bypassPermissions", "acceptEdits"): "acceptEdits",
    ("plan", "bypassPermissions"): "plan",
    ("default", "bypassPermissions"): "default",
    ("dontAsk", "auto"): "dontAsk",
    ("workspace", "default"): "default",    # workspace writes inside unasked
    ("default", "workspace"): "workspace",  # default offers tools workspace does not
    ("bypassPermissions", "unrestricted"): "bypassPermissions",
}


@pytest.mark.parametrize("pair, want", sorted(EXPECTED.items()))
def test_clamp_named_cases(pair: tuple[str, str], want: str) -> None:
    assert clamp_policy(*pair).name == want


def test_clamp_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown mode or level"):
        clamp_policy("root", "default")


# --- against the engine ------------------------------------------------------------


class _AllowAll:
    """A classifier that allows everything it sees: what auto could let run."""

    @hookimpl
    def pegboard_classify(self, request: PermissionRequest, decision: Decision) -> Vote:
        return Vote.allow("classifier says yes")


def _unattended(project: Project) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """For each policy: the tools it offers, and the probe calls that run with
    no person present (but a classifier that says yes to everything)."""
    (project.root / "src").mkdir(exist_ok=True)
    (project.root / ".git").mkdir(exist_ok=True)
    toolbox = project.load(host=_AllowAll())
    out = {}
    for name in POLICY_NAMES:
        session = toolbox.session(name)
        runs = set()
        for call, (tool, args) in CALLS.items():
            request = PermissionRequest(tool=toolbox.tools[tool], input=_fill(args, project), session=session,
                                        policy=session.policy)
            decision = asyncio.run(toolbox.permissions.authorize(request))
            if decision.decision == "allow":
                runs.add(call)
        out[name] = (frozenset(t.name for t in session.offered()), frozenset(runs))
    return out


def test_a_clamped_child_is_never_wider_than_its_parent_in_the_engine(project: Project) -> None:
    """Every pair: what the clamped policy offers and runs unattended is a
    subset of what the parent offers and runs."""
    facts = _unattended(project)
    # The probes tell the policies apart, or the check below would prove little.
    # (default and dontAsk run the same unattended; so do auto-with-a-yes-classifier,
    # bypassPermissions and unrestricted: eight classes.)
    assert len(set(facts.values())) == 8
    for requested, parent in PAIRS:
        got = clamp_policy(requested, parent).name
        offered, runs = facts[got]
        assert offered <= facts[parent][0], (requested, parent, got)
        assert runs <= facts[parent][1], (requested, parent, got)


def test_the_order_agrees_with_the_engine(project: Project) -> None:
    """Whenever the model calls a policy narrower, the engine agrees on the probes."""
    facts = _unattended(project)
    for a, b in PAIRS:
        if narrower_or_equal(policy_for(a), policy_for(b)):
            assert facts[a][0] <= facts[b][0] and facts[a][1] <= facts[b][1], (a, b)


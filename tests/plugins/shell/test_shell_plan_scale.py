"""The sandbox plan with many ``Read`` deny rules (issue 35 item 1): the
covering check is sort-based, not all pairs, and what the rules make of the
box is kept for the session until a rule changes. Correctness only; the
cost is bench/'s business."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard.paths import is_within
from pegboard.plugins.shell._config import ShellConfig
from pegboard.plugins.shell._guard import outermost
from pegboard.plugins.shell._permission import sandbox_plan
from pegboard.plugins.shell._sandbox import backend_for


def all_pairs_outermost(folders: list[Path]) -> list[Path]:
    """The check as it was: every folder against every one kept before it."""
    ordered = sorted(dict.fromkeys(folders), key=lambda p: len(p.parts))
    out: list[Path] = []
    for folder in ordered:
        if not any(is_within(folder, o) for o in out):
            out.append(folder)
    return out


def _random_paths(rng: random.Random, n: int) -> list[Path]:
    # few names, so that folders nest, repeat, and share prefixes that are not
    # containment (/a/b and /a/b2, /a/b-c, which sorts between /a/b and /a/b/c)
    names = ["a", "b", "b2", "b-c", "c", ".env", "x y"]
    out = []
    for _ in range(n):
        depth = rng.randint(1, 5)
        out.append(Path("/" + "/".join(rng.choice(names) for _ in range(depth))))
    return out


@pytest.mark.parametrize("seed", range(30))
def test_outermost_is_the_all_pairs_answer(seed: int) -> None:
    rng = random.Random(seed)
    paths = _random_paths(rng, rng.randint(0, 300))
    if seed % 5 == 0:
        paths.append(Path("/"))  # the root covers everything
    assert outermost(paths) == all_pairs_outermost(paths)
    assert outermost(iter(paths)) == all_pairs_outermost(paths)  # any iterable, taken once


def test_outermost_keeps_the_order_within_a_depth() -> None:
    paths = [Path("/z/1"), Path("/a/1"), Path("/m"), Path("/a/1/x"), Path("/z/1"), Path("/b")]
    assert outermost(paths) == [Path("/m"), Path("/b"), Path("/z/1"), Path("/a/1")]


@pytest.mark.skipif(backend_for("bubblewrap") != "bubblewrap", reason="needs bubblewrap")
def test_the_kept_plan_follows_every_rule_change(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    names = [f"secret{i}" for i in range(300)]
    for name in (*names, "nested", "late"):
        (root / name).mkdir()
    (root / "nested" / "inner").mkdir()
    rules = [f"Read(./{n}/**)" for n in names] + ["Read(./nested/inner/**)"]
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "bubblewrap"\n\n[permissions]\ndeny = ' + json.dumps(rules) + "\n")
    tb = Toolbox.load(cwd=root, plugins=["shell", "fs"], config=cfg)
    session = tb.session(mode="acceptEdits")
    state = session.plugin_state("shell")
    config = ShellConfig(sandbox="bubblewrap")

    def hidden() -> tuple[Path, ...]:
        plan = sandbox_plan(session, state, config, disable=False)
        assert plan is not None
        return plan.box.hidden

    first = hidden()
    assert {root / n for n in names} <= set(first) and root / "nested" / "inner" in first
    assert hidden() is first  # kept: the same rules give the same plan without going through them again
    outer = session.grant("Read(./nested/**)", "deny")
    covered = hidden()
    assert root / "nested" in covered and root / "nested" / "inner" not in covered  # the outer one covers it
    late = session.grant("Read(./late/**)", "deny")
    assert root / "late" in hidden()
    late.revoke()
    outer.revoke()
    again = hidden()
    assert root / "late" not in again and root / "nested" not in again and root / "nested" / "inner" in again
    assert set(again) == set(first)
    # a new session starts from its own rules
    other = tb.session(mode="acceptEdits")
    plan = sandbox_plan(other, other.plugin_state("shell"), config, disable=False)
    assert plan is not None and set(plan.box.hidden) == set(first)


def test_rules_for_is_one_object_until_the_rules_change(tmp_path: Path) -> None:
    """What lets a plugin keep what it derives from the rules: the engine
    hands over the same tuple while they are unchanged, another once a rule
    or grant is added, and the same rules again once a grant is revoked."""
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[permissions]\ndeny = ["Read(./a/**)", "Read(./b/**)"]\nallow = ["Read(./c/**)"]\n')
    tb = Toolbox.load(cwd=root, plugins=["shell", "fs"], config=cfg)
    session = tb.session(mode="default")
    first = session.rules_for("deny", "Read")
    assert [c.rule.text for c in first] == ["Read(./a/**)", "Read(./b/**)"]
    assert session.rules_for("deny", "Read") is first
    assert tb.session(mode="default").rules_for("deny", "Read") is first  # a toolbox's rules, every session's
    grant = session.grant("Read(./d/**)", "deny")
    granted = session.rules_for("deny", "Read")
    assert [c.rule.text for c in granted] == ["Read(./a/**)", "Read(./b/**)", "Read(./d/**)"]
    grant.revoke()
    assert [c.rule.text for c in session.rules_for("deny", "Read")] == ["Read(./a/**)", "Read(./b/**)"]
    allowed = session.rules_for("allow", "Read")
    assert session.rules_for("allow", "Read") is allowed
    tb.permissions.remember("Read(./e/**)", "user", session)  # an approval kept: a rule of the toolbox now
    after = session.rules_for("allow", "Read")
    assert after is not allowed and [c.rule.text for c in after] == ["Read(./c/**)", "Read(./e/**)"]
    assert session.rules_for("deny", "Read") is first  # the other lists are not touched


@pytest.mark.slow
@pytest.mark.skipif(backend_for("bubblewrap") != "bubblewrap", reason="needs bubblewrap")
def test_a_decision_with_the_same_rules_goes_through_none_of_them(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept plan is used as it is: a second sandboxed Bash decision asks
    no rule's matcher for its path (what made a decision grow with the rules)."""
    from pegboard import PermissionRequest
    from pegboard.plugins.shell import _filerules

    root = (tmp_path / "proj").resolve()
    root.mkdir()
    cfg = tmp_path / "c.toml"
    rules = [f"Read(./secret{i}/**)" for i in range(50)]
    cfg.write_text('[plugins.shell]\nsandbox = "bubblewrap"\n\n[permissions]\ndeny = ' + json.dumps(rules) + "\n")
    tb = Toolbox.load(cwd=root, plugins=["shell", "fs"], config=cfg)
    session = tb.session(mode="acceptEdits")
    tool = tb.tools["Bash"]

    def decide() -> str:
        request = PermissionRequest(tool=tool, input={"command": "npm test"}, session=session, policy=session.policy)
        return tb.permissions.evaluate(request).decision

    assert decide() == "allow"
    asked: list[object] = []
    real = _filerules._fixed_path
    monkeypatch.setattr(_filerules, "_fixed_path", lambda compiled: asked.append(compiled) or real(compiled))
    assert decide() == "allow" and asked == []
    session.grant("Read(./late/**)", "deny")
    assert decide() == "allow" and len(asked) == 51  # a rule changed: gone through again

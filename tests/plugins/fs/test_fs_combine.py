"""``FsRuleMatcher.combine``: many fs path rules as one lookup, agreeing
exactly with calling each rule's matcher in turn (the first that matches)."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest

from pegboard import PermissionRequest, Toolbox
from pegboard._api.decisions import Rule
from pegboard._engine.permissions.engine import _Group
from pegboard.plugins.fs._combine import CombinedFsRules, _body
from pegboard.plugins.fs._vote import COVERS, FsRuleMatcher

TOOLS = ("Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep")
FIELD = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "NotebookEdit": "notebook_path",
         "Glob": "path", "Grep": "path"}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    base = tmp_path.resolve()
    home = base / "home"
    proj = base / "proj"
    outside = base / "outside"
    for rel in ("docs/guide.md", "docs/api/ref.md", "src/app.py", "src/pkg/mod.py", ".env", "secret/key.txt",
                "gen7/keep.txt", "a b/c.txt", "x*y.md", "weird\nname", "deep/a/b/c/d.txt", "README"):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(rel)
    (proj / "alias").symlink_to(proj / "secret")  # a symlinked dir
    (proj / "docs" / "link.md").symlink_to(outside / "f.txt")  # a symlink leading outside
    (proj / "dangling").symlink_to(proj / "nowhere")
    (outside / "sub").mkdir(parents=True)
    (outside / "f.txt").write_text("x")
    (outside / "sub" / "g.py").write_text("x")
    (home / "notes").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id").write_text("k")
    (home / "notes" / "a.md").write_text("n")
    (base / "linked-proj").symlink_to(proj)  # rules written through a symlinked folder
    monkeypatch.setenv("HOME", str(home))
    return {"base": base, "home": home, "proj": proj, "outside": outside}


def _specifiers(w: dict[str, Path]) -> list[str]:
    base, proj = w["base"], w["proj"]
    return [
        "docs/**", "./docs", "/docs/", "docs/", "docs", "src/*.py", "**/*.py", "*.md", ".env", "./.env",
        "secret/**", "alias/**", "./alias", "gen7/**", "gen*/**", "gen8/**", "**", "*", "src/", "src/**/mod.py",
        "a b/*", "x\\*y.md", "weird*", "[sd]*/**", "?ocs/**", "docs/api", "docs/**/ref.md", "deep/**/d.txt",
        "nonexistent/**", "missing.txt", "README", "!docs/**", "!*.md", "#comment", "docs/**/", "**/pkg",
        f"//{w['outside']}/**", f"//{w['outside']}", f"//{w['outside']}/sub/*.py", f"//{proj}/src/pkg/**",
        f"//{base}/linked-proj/docs/**", f"//{base}/*/secret/**", "//**", "//etc/passwd", "//tmp/**",
        "~/notes/**", "~/.ssh/*", "~", "~/", "~/notes", "weird\nname",
    ]


def _paths(w: dict[str, Path]) -> list[str]:
    proj, outside, base = w["proj"], w["outside"], w["base"]
    rel = ["docs/guide.md", "docs", "docs/", "docs/api", "docs/api/ref.md", "docs/link.md", "src/app.py", "src",
           "src/pkg", "src/pkg/mod.py", ".env", "secret/key.txt", "secret", "alias/key.txt", "alias", "gen7",
           "gen7/new.py", "gen8/x/y.py", "missing.txt", ".", "..", "../outside/f.txt", "a b/c.txt", "x*y.md",
           "weird\nname", "deep/a/b/c/d.txt", "deep/a", "README", "dangling", "nowhere/x", "", "docs/../.env",
           "src//app.py", ".env\n", "docs\n", "docs\n/x"]
    out = rel + [str(proj / r) for r in rel[:12]]
    out += [str(proj), str(outside), str(outside / "f.txt"), str(outside / "sub"), str(outside / "sub" / "g.py"),
            str(outside / "new" / "n.py"), "/", "/etc/passwd", "/tmp", str(base), str(base / "linked-proj" / "docs"),
            str(base / "linked-proj" / "docs" / "guide.md"), "~/notes/a.md", "~/notes", "~/.ssh/id", "~", "~/x",
            "//" + str(proj).lstrip("/") + "/docs", "//" + str(proj).lstrip("/") + "/docs/guide.md",
            "bad\x00path"]
    return out


def _toolbox(proj: Path) -> Any:
    return Toolbox.load(cwd=proj, plugins=["fs"])


def _matcher(tool: str, spec: str, behavior: str, proj: Path) -> FsRuleMatcher:
    return FsRuleMatcher(Rule.parse(f"{tool}({spec})", behavior, "test", proj), proj)  # type: ignore[arg-type]


def _request(tb: Any, session: Any, tool: str, raw: str | None) -> PermissionRequest:
    inp: dict[str, Any] = {} if raw is None else {FIELD[tool]: raw}
    if tool in ("Glob", "Grep"):
        inp["pattern"] = "*"
    return PermissionRequest(tool=tb.tools[tool], input=inp, session=session, policy=session.policy)


def _check(tb: Any, session: Any, matchers: list[FsRuleMatcher], tools: tuple[str, ...],
           paths: list[str | None]) -> int:
    combined = FsRuleMatcher.combine(matchers)
    checked = 0
    for tool in tools:
        for raw in paths:
            one_by_one = [m.matches(_request(tb, session, tool, raw)) for m in matchers]
            first = next((i for i, hit in enumerate(one_by_one) if hit), None)
            got = combined.first_match(_request(tb, session, tool, raw))
            assert got == first, (tool, raw, [str(m.rule.text) for m in matchers], got, first)
            checked += 1
    return checked


@pytest.mark.slow
def test_every_specifier_alone_and_all_together(world: dict[str, Path]) -> None:
    proj = world["proj"]
    tb = _toolbox(proj)
    s = tb.session(mode="default")
    specs, paths = _specifiers(world), _paths(world)
    for behavior in ("allow", "deny"):
        for tool in ("Read", "Edit"):
            matchers = [_matcher(tool, spec, behavior, proj) for spec in specs]
            _check(tb, s, matchers, TOOLS, [*paths, None])
            # reversed: a different rule comes first for many paths
            _check(tb, s, matchers[::-1], ("Read", "Write", "Grep"), paths)
    for spec in specs:  # two-rule groups: each specifier next to a rule that never matches
        _check(tb, s, [_matcher("Read", "never/**", "deny", proj), _matcher("Read", spec, "deny", proj)],
               ("Read",), paths)


@pytest.mark.slow
def test_random_rule_sets_agree(world: dict[str, Path]) -> None:
    proj = world["proj"]
    tb = _toolbox(proj)
    s = tb.session(mode="default")
    specs, paths = _specifiers(world), _paths(world)
    rng = random.Random(20261129)
    total = 0
    for _ in range(60):
        # mixed tools (so mixed covers) and behaviors, as a caller other than the engine might give
        matchers = [_matcher(rng.choice(list(COVERS)), rng.choice(specs), rng.choice(("allow", "deny", "ask")), proj)
                    for _ in range(rng.randint(2, 25))]
        total += _check(tb, s, matchers, TOOLS, rng.sample(paths, 20) + [None])
    assert total > 5000


@pytest.mark.slow
def test_many_rules_of_one_tool(world: dict[str, Path]) -> None:
    proj = world["proj"]
    tb = _toolbox(proj)
    s = tb.session(mode="default")
    for i in range(30):
        (proj / f"secret{i}").mkdir()
    matchers = [_matcher("Read", f"secret{i}/**", "deny", proj) for i in range(200)]
    matchers += [_matcher("Read", spec, "deny", proj) for spec in ("*.md", "**/pkg", f"//{world['outside']}/**")]
    paths = [*_paths(world), "secret7", "secret7/x", "secret199/a/b", "secret200/x", "secret1", "secret10/",
             str(proj / "secret29"), "secret7x/y", "secret"]
    _check(tb, s, matchers, ("Read", "Grep", "Write"), paths)


def test_unusable_path_matches_deny_rules_not_allow_rules(world: dict[str, Path]) -> None:
    proj = world["proj"]
    tb = _toolbox(proj)
    s = tb.session(mode="default")
    deny = [_matcher("Read", f"d{i}/**", "deny", proj) for i in range(5)]
    allow = [_matcher("Read", f"a{i}/**", "allow", proj) for i in range(5)]
    for raw in ("bad\x00path", None):
        assert FsRuleMatcher.combine(deny).first_match(_request(tb, s, "Read", raw)) == 0
        assert FsRuleMatcher.combine(allow).first_match(_request(tb, s, "Read", raw)) is None
        assert FsRuleMatcher.combine(allow + deny).first_match(_request(tb, s, "Read", raw)) == 5
        # a rule that does not cover the tool never matches, not even then
        assert FsRuleMatcher.combine(deny).first_match(_request(tb, s, "Write", raw)) is None


def test_directory_stat_at_most_once_and_only_when_needed(world: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    proj = world["proj"]
    tb = _toolbox(proj)
    s = tb.session(mode="default")
    calls: list[str] = []
    real_is_dir = os.path.isdir

    def counting(path: str) -> bool:
        calls.append(path)
        return real_is_dir(path)

    matchers = [_matcher("Read", spec, "deny", proj) for spec in ("docs/**", "src/**", "gen*/**",
                                                                  f"//{world['outside']}/**")]
    matchers.append(_matcher("Edit", "docs/**", "deny", proj))  # a second covers set
    combined = FsRuleMatcher.combine(matchers)
    monkeypatch.setattr(os.path, "isdir", counting)
    # gen8 does not exist: resolving it found that out, so it is not looked at again
    for raw, expected, stats in (("src/app.py", 1, 0), ("README", None, 0), ("docs", 0, 1), ("docs/guide.md", 0, 0),
                                 ("gen7", 2, 1), ("gen8", None, 0), (".env", None, 0)):
        calls.clear()
        assert combined.first_match(_request(tb, s, "Read", raw)) == expected, raw
        assert len(calls) == stats, (raw, calls)
    calls.clear()
    assert combined.first_match(_request(tb, s, "Write", "docs")) == 4
    assert len(calls) == 1


def test_what_cannot_be_combined_is_refused(world: dict[str, Path]) -> None:
    proj = world["proj"]

    class Custom(FsRuleMatcher):
        def matches(self, request: PermissionRequest) -> bool:
            return True

    rule = Rule.parse("Read(docs/**)", "deny", "t", proj)
    with pytest.raises(ValueError):
        FsRuleMatcher.combine([FsRuleMatcher(rule, proj), Custom(rule, proj)])

    class Fake:
        include = True

        def __init__(self, regex: Any) -> None:
            self.regex = regex

    for regex in (re.compile("(?i)^a"), re.compile("^a", re.IGNORECASE), re.compile(rb"^a"), None,
                  re.compile(r"^(?P<x>a)(?P=x)"), re.compile(r"^(a)\1")):
        with pytest.raises(ValueError):
            _body(Fake(regex))
    # negations and comments never match alone: combined, they are left out
    assert _body(type("P", (), {"include": False, "regex": re.compile("^a")})()) is None
    assert _body(type("P", (), {"include": None, "regex": None})()) is None


def test_engine_groups_fs_rules(world: dict[str, Path], tmp_path: Path) -> None:
    proj = world["proj"]
    cfg = tmp_path / "rules.toml"
    cfg.write_text("[permissions]\n" + f"deny = {json.dumps([f'Read(secret{i}/**)' for i in range(50)])}\n")
    tb = Toolbox.load(cwd=proj, plugins=["fs"], config=cfg)
    units = tb.permissions._units("deny", "Read")
    assert len(units) == 1 and isinstance(units[0], _Group) and isinstance(units[0].combined, CombinedFsRules)


@pytest.mark.slow
def test_decisions_through_the_toolbox_match_one_by_one(world: dict[str, Path], tmp_path: Path) -> None:
    proj, outside = world["proj"], world["outside"]
    specs = _specifiers(world)
    rng = random.Random(7)
    allow = [f"Write(gen{i}/**)" for i in range(100)] + [f"Edit(docs/sub{i}/**)" for i in range(50)]
    allow += [f"Read({rng.choice(specs)})" for _ in range(20)] + [f"Glob({rng.choice(specs)})" for _ in range(10)]
    deny = [f"Read(secret{i}/**)" for i in range(100)] + ["Read(./.env)", "Edit(src/pkg/**)", "Read(alias/**)"]
    deny += [f"Grep({rng.choice(specs)})" for _ in range(10)]
    ask = [f"Edit({rng.choice(specs)})" for _ in range(20)] + [f"Write(src/gen{i}.py)" for i in range(30)]
    cfg = tmp_path / "rules.toml"
    cfg.write_text("[permissions]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in
                                                   (("allow", allow), ("deny", deny), ("ask", ask))))
    tb = Toolbox.load(cwd=proj, plugins=["fs"], config=cfg)
    assert len(tb.permissions.rules) > 300
    paths = [*_paths(world), "gen7/x.py", "gen99/a/b.py", "gen100/x", "docs/sub3/x.md", "secret42/k",
             "src/gen5.py", "src/pkg/new.py", str(outside / "sub" / "g.py")]
    engine = tb.permissions
    cases = [(mode, tool, raw) for mode in ("default", "acceptEdits", "plan") for tool in TOOLS for raw in paths]

    def decide() -> list[tuple[str, str, str]]:
        out = []
        for mode, tool, raw in cases:
            s = tb.session(mode=mode)
            d = engine.evaluate(_request(tb, s, tool, raw))
            out.append((d.decision, d.reason, d.source))
        return out

    combined = decide()
    grouped = [u for plans in engine._plans.values() for units in plans.values() for u in units
               if isinstance(u, _Group)]
    assert len(grouped) >= 5  # Read/Write/Edit/Glob/Grep groups were combined, not one by one
    engine._plans = {b: {t: list(engine._compiled(b, t)) for t in list(engine._index[b])} for b in engine._index}
    one_by_one = decide()
    assert combined == one_by_one
    assert {d for d, _, _ in combined} == {"allow", "ask", "deny"}
    assert os.path.isdir(proj)


@pytest.mark.slow
def test_a_tools_rules_made_once_agree_with_the_lookup_by_name(world: dict[str, Path], tmp_path: Path) -> None:
    """Without grants, evaluate tries a tuple of each tool's units made once
    (``_tool_units``) instead of ``_match``'s lookup name by name: the same
    rule must be found either way, also for rules under another name (Edit
    rules cover Write), and after a rule is added (the tuples are made again)."""
    proj = world["proj"]
    allow = [f"Write(gen{i}/**)" for i in range(40)] + ["Edit(docs/**)", "Read(src/**)", "Glob(**)"]
    deny = [f"Read(secret{i}/**)" for i in range(40)] + ["Edit(src/pkg/**)", "Write(gen3/no.py)"]
    ask = ["Edit(*.md)", "Write(src/gen5.py)", "NotebookEdit(**)"]
    cfg = tmp_path / "rules.toml"
    cfg.write_text("[permissions]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in
                                                   (("allow", allow), ("deny", deny), ("ask", ask))))
    tb = Toolbox.load(cwd=proj, plugins=["fs"], config=cfg)
    engine = tb.permissions
    paths = [*_paths(world), "gen7/x.py", "gen3/no.py", "docs/a.md", "src/gen5.py", "src/pkg/x.py", "secret9/k"]
    session = tb.session(mode="default")

    def check() -> set[str]:
        found = set()
        for tool in TOOLS:
            units = dict(zip(("deny", "ask", "allow"), engine._tool_units(tb.tools[tool])))
            for raw in paths:
                for behavior in ("deny", "ask", "allow"):
                    fast = engine._first_hit(units[behavior], behavior, _request(tb, session, tool, raw))
                    slow = engine._match(behavior, _request(tb, session, tool, raw))
                    assert fast is slow, (tool, raw, behavior, fast, slow)
                    if fast is not None:
                        found.add(f"{behavior} {fast.rule.text}")
        return found

    before = check()
    assert {"allow Edit(docs/**)", "deny Edit(src/pkg/**)", "ask Edit(*.md)", "deny Write(gen3/no.py)"} <= before
    engine._add(engine.compile(Rule.parse("Write(docs/**)", "deny", "test", proj), "test"))  # type: ignore[arg-type]
    after = check()
    assert "deny Write(docs/**)" in after and "deny Write(docs/**)" not in before
    # With a grant, evaluate looks name by name (grants lie between): the same decisions.
    granted = tb.session(mode="default")
    granted.grant("Read(nothing-here/**)")
    for tool in TOOLS:
        for raw in paths:
            plain = engine.evaluate(_request(tb, tb.session(mode="default"), tool, raw))
            other = engine.evaluate(_request(tb, granted, tool, raw))
            assert (plain.decision, plain.reason, plain.source) == (other.decision, other.reason, other.source)

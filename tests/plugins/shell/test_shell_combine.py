"""The shell's combined Bash rules agree with asking each rule in turn.

``BashRule.combine`` (the engine's optional ``combine`` protocol) must give
exactly the answer the engine would get by calling each matcher's
``matches`` in order: the same first index, None exactly when none matches,
and the same record of covered parts in ``request.extra`` (which later rule
groups of the same request, such as Monitor's own rules, read).
"""

from __future__ import annotations

import json
import random
import shlex
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard._api.decisions import PermissionRequest, Rule
from pegboard._engine.permissions.engine import _Group
from pegboard.plugins.shell import _permission as P
from pegboard.plugins.shell._permission import BashRule, CombinedBashRules

WORDS = ["git", "gitx", "log", "status", "push", "--force", "npm", "run", "test", "build", "make",
         "ls", "-la", "cat", "src/a.py", "rm", "-rf", "a b", "x*y", "sudo", "echo"]

GLOBS = ["git *", "git * --force", "npm run *", "npm run", "*status", "gi*", "* test", "ls*", "*",
         "make *", "git log*", "echo a b *", "rm -rf *", "cat src/*", "npm  run   *", "sudo *"]

# Read-only parts (inside the project: their paths may be read) and parts
# that are not (outside, or not read-only at all).
READ_PARTS = ["ls", "ls -la", "cat src/a.py", "git status"]
OTHER_PARTS = ["cat /etc/hostname", "ls ..", "rm -rf src", "make build", "npm run build", "gitx log"]

ODD_LINES = ["echo $(git push --force)", "sudo git push --force", "bash -c 'git push'", "FOO=1 git log",
             "git log > out", "npm run build &", "env A=B make test", "/usr/bin/git push", "(git status)",
             "git push\\\n --force", "  ", "", "eval git push", "xargs rm -rf", "git log | (cat)"]


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    return root


def _toolbox(proj: Path, tmp_path: Path, **rules: list[str]) -> Toolbox:
    cfg = tmp_path / "cfg.toml"
    lines = [f"{k} = {json.dumps(v)}" for k, v in rules.items()]
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n\n[permissions]\n' + "\n".join(lines) + "\n")
    return Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)


@pytest.fixture
def tb(proj: Path, tmp_path: Path) -> Toolbox:
    return _toolbox(proj, tmp_path)


def _request(tb: Toolbox, command: Any, tool: str = "Bash") -> PermissionRequest:
    session = tb.session()
    data: dict[str, Any] = {"command": command}
    if tool == "Monitor":
        data["description"] = "watch"
    return PermissionRequest(tool=tb.tools[tool], input=data, session=session, policy=session.policy)


def _matchers(texts: list[str], behavior: str, root: Path) -> list[BashRule]:
    return [BashRule(Rule.parse(t, behavior, "test", root)) for t in texts]  # type: ignore[arg-type]


def _one_by_one(matchers: list[BashRule], request: PermissionRequest) -> int | None:
    """What the engine does without combine."""
    for i, m in enumerate(matchers):
        if m.matches(request):
            return i
    return None


def _quote(word: str, rng: random.Random) -> str:
    style = rng.randrange(4)
    if style == 0 or not word.replace("-", "").replace("/", "").replace(".", "").isalnum():
        return shlex.quote(word)
    if style == 1:
        return f"'{word}'"
    if style == 2:
        return f'"{word}"'
    return word


def _random_rule(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
        return f"Bash({' '.join(_quote(w, rng) for w in words)}:*)"
    if kind == 1:
        if rng.random() < 0.15:
            return f"Bash({rng.choice([line for line in ODD_LINES if line.strip()])})"
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
        return f"Bash({' '.join(_quote(w, rng) for w in words)})"
    return f"Bash({rng.choice(GLOBS)})"


def _random_part(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.2:
        return rng.choice(READ_PARTS)
    if pick < 0.35:
        return rng.choice(OTHER_PARTS)
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
    gap = " " * rng.randint(1, 3)
    return gap.join(_quote(w, rng) for w in words)


def _random_command(rng: random.Random) -> str:
    if rng.random() < 0.12:
        return rng.choice(ODD_LINES)
    parts = [_random_part(rng) for _ in range(rng.choice([1, 1, 1, 2, 2, 3]))]
    line = parts[0]
    for part in parts[1:]:
        line += rng.choice([" && ", "&&", " || ", "; ", " | ", "\n"]) + part
    return rng.choice(["", " ", "  "]) + line + rng.choice(["", " ", "\t"])


def _agree(tb: Toolbox, matchers: list[BashRule], command: Any, covered: set[int] | None = None,
           tool: str = "Bash") -> int | None:
    """The combined answer, checked against the one-by-one answer (with the
    same record of covered parts before and after)."""
    combined = BashRule.combine(matchers)
    assert isinstance(combined, CombinedBashRules)
    first, second = _request(tb, command, tool), _request(tb, command, tool)
    if covered is not None:
        first.extra[P._COVERED] = set(covered)
        second.extra[P._COVERED] = set(covered)
    expected = _one_by_one(matchers, first)
    got = combined.first_match(second)
    assert got == expected, (command, [m.rule.text for m in matchers])
    assert first.extra.get(P._COVERED) == second.extra.get(P._COVERED), command
    return got


SEEDS = range(12)


def _random_case(behavior: str, seed: int) -> tuple[list[str], list[str]]:
    """The rule texts and command lines of one seeded random case."""
    rng = random.Random(f"{behavior}-{seed}")
    texts = [_random_rule(rng) for _ in range(rng.randint(1, 25))]
    return texts, [_random_command(rng) for _ in range(40)]


@pytest.mark.parametrize("behavior", ["allow", "deny", "ask"])
@pytest.mark.parametrize("seed", SEEDS)
def test_random_rule_sets_agree(tb: Toolbox, proj: Path, behavior: str, seed: int) -> None:
    texts, commands = _random_case(behavior, seed)
    matchers = _matchers(texts, behavior, proj)
    for command in commands:
        got = _agree(tb, matchers, command)
        if behavior != "allow":
            # Stateless rules: None exactly when no rule matches on its own,
            # and the index is the first rule that does.
            alone = [m.matches(_request(tb, command)) for m in matchers]
            assert (got is None) == (not any(alone)), command
            if got is not None:
                assert alone[got] and not any(alone[:got]), command
        elif got is not None:
            # The rule found matches with the parts its predecessors covered.
            request = _request(tb, command)
            for m in matchers[:got]:
                assert not m.matches(request)
            assert matchers[got].matches(request)


@pytest.mark.parametrize("behavior", ["allow", "deny", "ask"])
def test_random_cases_both_match_and_miss(tb: Toolbox, proj: Path, behavior: str) -> None:
    """The generators are worth something: across the seeds the random test
    uses, every behavior sees both matches and misses. Worked out here, so
    the test stands alone (run by itself, in any order, or in parallel)."""
    hits = misses = 0
    for seed in SEEDS:
        texts, commands = _random_case(behavior, seed)
        matchers = _matchers(texts, behavior, proj)
        for command in commands:
            if _one_by_one(matchers, _request(tb, command)) is None:
                misses += 1
            else:
                hits += 1
    assert hits >= 40 and misses >= 40, (behavior, hits, misses)


@pytest.mark.parametrize("seed", range(6))
def test_covered_parts_from_earlier_groups(tb: Toolbox, proj: Path, seed: int) -> None:
    """Parts covered by rules the engine asked before this group count."""
    rng = random.Random(seed)
    matchers = _matchers([_random_rule(rng) for _ in range(rng.randint(2, 15))], "allow", proj)
    for _ in range(30):
        command = _random_command(rng)
        _agree(tb, matchers, command, covered={rng.randrange(3) for _ in range(rng.randint(0, 2))})


# Hand-picked cases: word prefixes are not string prefixes, quoting neither
# defeats nor widens, every part must be covered, deny looks everywhere.
CASES: list[tuple[list[str], str, str, int | None]] = [
    (["Bash(git:*)"], "allow", "gitx log", None),
    (["Bash(git:*)"], "allow", "git", 0),
    (["Bash(git:*)"], "deny", "gitx push", None),
    (["Bash(gitx:*)", "Bash(git:*)"], "allow", "git push", 1),
    (["Bash(gitx:*)", "Bash(git:*)"], "allow", "git log", 1),  # read-only, and rule 1 names it
    (["Bash(git log:*)"], "allow", "'git'   \"log\"  -5", 0),
    (["Bash(git log:*)"], "allow", "'git log' -5", None),
    (["Bash('a b':*)"], "allow", "'a b' c", 0),
    (["Bash(a:*)"], "allow", "'a b' c", None),
    (["Bash(make:*)", "Bash(npm test)"], "allow", "npm test && make build", 1),
    (["Bash(npm test)", "Bash(make:*)"], "allow", "make build && npm test", 1),
    (["Bash(make:*)"], "allow", "make build && rm -rf src", None),
    (["Bash(make:*)"], "allow", "make build && ls -la", 0),
    (["Bash(make:*)"], "allow", "make build && cat /etc/hostname", None),
    (["Bash(rm:*)", "Bash(make:*)"], "allow", "ls", None),  # read-only, but no rule's doing: the vote's
    (["Bash(rm:*)", "Bash(ls:*)"], "allow", "ls | head", 1),
    (["Bash(npm run *)"], "allow", "npm run", 0),
    (["Bash(npm run *)"], "allow", "npm running", None),
    (["Bash(npm run *)"], "allow", "npm   run    lint", 0),
    (["Bash(gi*)", "Bash(git *)"], "allow", "gitx", 0),
    (["Bash(git * --force)"], "deny", "sudo git push --force", 0),
    (["Bash(git push:*)"], "deny", "echo $(git push)", 0),
    (["Bash(git push:*)"], "ask", "bash -c 'git push origin'", 0),
    (["Bash(git push:*)"], "allow", "echo $(git push)", None),
    (["Bash(echo $(date))"], "allow", " echo $(date) ", 0),  # exact text of a line that is not simple
    (["Bash(make:*)", "Bash(echo $(date))"], "allow", "echo $(date)", 1),
    (["Bash(rm:*)", "Bash(make test)"], "allow", "make test", 1),
    (["Bash(make test)"], "allow", "make  test ", 0),
    (["Bash(make test)"], "allow", "make test x", None),
    (["Bash(rm:*)", "Bash(ls:*)", "Bash(cat:*)"], "deny", "ls && cat x && rm y", 0),
    (["Bash(cat:*)", "Bash(ls:*)"], "deny", "ls", 1),
    (["Bash(*)"], "allow", "anything at all", 0),
    (["Bash(*)"], "allow", "echo $(x)", None),
    (["Bash(*)"], "deny", "echo $(x)", 0),
]


@pytest.mark.parametrize(("texts", "behavior", "command", "expected"), CASES)
def test_cases(tb: Toolbox, proj: Path, texts: list[str], behavior: str, command: str,
               expected: int | None) -> None:
    assert _agree(tb, _matchers(texts, behavior, proj), command) == expected


@pytest.mark.parametrize("command", [None, 7, ["git", "log"]])
def test_no_command_string(tb: Toolbox, proj: Path, command: Any) -> None:
    for behavior in ("allow", "deny"):
        assert _agree(tb, _matchers(["Bash(git:*)", "Bash(*)"], behavior, proj), command) is None


def test_mixed_behaviors_refuse_to_combine(proj: Path) -> None:
    matchers = _matchers(["Bash(git:*)"], "allow", proj) + _matchers(["Bash(rm:*)"], "deny", proj)
    with pytest.raises(ValueError):
        BashRule.combine(matchers)


def test_config_dir_names_pegboard() -> None:
    # The vote skips working out the config dir for a line without "pegboard".
    from pegboard._loading.config import config_dir

    assert "pegboard" in str(config_dir())


# --- through the engine ---------------------------------------------------------------


def _many_rules(rng: random.Random) -> dict[str, list[str]]:
    allow = [f"Bash(cmd{i}:*)" for i in range(300)] + [f"Bash(tool{i} run *)" for i in range(50)]
    allow += [_random_rule(rng) for _ in range(50)] + ["Monitor(tail:*)"]
    ask = [f"Bash(push{i}:*)" for i in range(60)] + [_random_rule(rng) for _ in range(10)]
    deny = [f"Bash(danger{i} *)" for i in range(25)] + [_random_rule(rng) for _ in range(5)]
    return {"allow": allow, "ask": ask, "deny": deny}


def _without_combine(tb: Toolbox) -> None:
    engine = tb.permissions
    engine._plans = {b: {t: list(engine._compiled(b, t)) for t in list(engine._index[b])} for b in engine._index}


@pytest.mark.slow
def test_engine_decides_the_same_without_combine(proj: Path, tmp_path: Path) -> None:
    rng = random.Random(2026)
    rules = _many_rules(rng)
    assert sum(len(v) for v in rules.values()) >= 500
    combined = _toolbox(proj, tmp_path, **rules)
    plain = _toolbox(proj, tmp_path, **rules)
    _without_combine(plain)
    groups = [u for u in combined.permissions._units("allow", "Bash") if isinstance(u, _Group)]
    assert groups and isinstance(groups[0].combined, CombinedBashRules)  # combine is in use, not skipped
    commands = ["cmd299 --all", "cmd12 && cmd7 x", "cmd12 && rm -rf src", "tool3 run lint", "tool3 runs",
                "push5 origin", "sudo push5", "cmd1 && push2", "danger3 now", "echo $(danger3 now)",
                "make build", "ls -la", "cat src/a.py | cmd5", "cmd5 | cat /etc/hostname", "tail -f log"]
    commands += [_random_command(rng) for _ in range(150)]
    commands += [f"{rng.choice(['cmd', 'push', 'danger', 'tool'])}{rng.randrange(400)} {rng.choice(WORDS)}"
                 for _ in range(100)]
    for mode in ("default", "dontAsk"):
        for tool in ("Bash", "Monitor"):
            for command in commands:
                a = combined.permissions.evaluate(_request(combined, command, tool) if mode == "default"
                                                  else _mode_request(combined, command, tool, mode))
                b = plain.permissions.evaluate(_request(plain, command, tool) if mode == "default"
                                               else _mode_request(plain, command, tool, mode))
                assert (a.decision, a.reason, a.source) == (b.decision, b.reason, b.source), (mode, tool, command)


def _mode_request(tb: Toolbox, command: str, tool: str, mode: str) -> PermissionRequest:
    session = tb.session(mode=mode)
    data: dict[str, Any] = {"command": command}
    if tool == "Monitor":
        data["description"] = "watch"
    return PermissionRequest(tool=tb.tools[tool], input=data, session=session, policy=session.policy)


def test_the_line_is_read_once_per_decision(proj: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without combine too: the parse and classification are made once for
    the request, not once per rule."""
    rules = _many_rules(random.Random(7))
    tb = _toolbox(proj, tmp_path, **rules)
    _without_combine(tb)
    counts = {"classify": 0, "words": 0}
    real_classify, real_words = P.classify, P.all_command_words

    def classify(*args: Any, **kwargs: Any) -> Any:
        counts["classify"] += 1
        return real_classify(*args, **kwargs)

    def words(*args: Any, **kwargs: Any) -> Any:
        counts["words"] += 1
        return real_words(*args, **kwargs)

    monkeypatch.setattr(P, "classify", classify)
    monkeypatch.setattr(P, "all_command_words", words)
    for i, command in enumerate(["make build-once-1", "cmd399 --x && make y-once-2", "ls -la src && cmd4"]):
        P._candidates.cache_clear()
        before = dict(counts)
        decision = tb.permissions.evaluate(_request(tb, command))
        assert decision.decision in ("allow", "ask"), decision
        assert counts["classify"] - before["classify"] == 1, command
        assert counts["words"] - before["words"] <= 1, command

"""The rule cache protocol (issue 35, item 5): a large config file's compiled
rules are kept beside its cached parse, what each plugin's matchers and
combined groups ``save()``d, and the next process builds them from it
(``pegboard_rule_matcher(..., saved)``, ``combine(matchers, saved=...)``)
instead of parsing every rule again. It decides every call the same; a
changed rule, a changed plugin file or a folder that resolves elsewhere now
means nothing kept is used; a damaged entry only costs speed; and
``pegboard plugins check`` holds a plugin's ``save()`` to the same answers."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _trusted import trust

from pegboard import PermissionRequest, Toolbox, check_plugin
from pegboard._loading.config import layer_cache_dir
from pegboard._engine.permissions.lazy_rules import DeferredLayer

pytestmark = pytest.mark.slow  # many rules and rows, real stores

PLUGINS = ["fs", "shell", "web"]


def _rules(n: int) -> dict[str, list[str]]:
    return {
        "allow": [f"Bash(cmd{i}:*)" for i in range(n)] + [f"WebFetch(domain:host{i}.example.com)" for i in range(n)]
                 + [f"Write(gen{i}/**)" for i in range(n)] + ["Bash(npm run *)"],
        "deny": [f"Read(./secret{i}/**)" for i in range(n)] + ["Bash(rm:*)", "Read(*.pem)"],
        "ask": [f"Bash(push{i}:*)" for i in range(n)] + ["WebFetch(domain:*.ask.example.com)"],
    }


def _write(root: Path, rules: dict[str, list[str]]) -> None:
    path = root / ".pegboard" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[permissions]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in rules.items()))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / "secret7").mkdir()
    (root / "gen3").mkdir()
    trust(root)
    user = layer_cache_dir().parent
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.toml").write_text('[plugins.shell]\nsandbox = "off"\n')
    _write(root, _rules(120))
    return root


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Bash", {"command": "cmd119 --all"}),
    ("Bash", {"command": "push7 origin"}),
    ("Bash", {"command": "rm -rf x"}),
    ("Bash", {"command": "npm run build"}),
    ("Bash", {"command": "make"}),
    ("Read", {"file_path": "{root}/secret42/k.txt"}),
    ("Read", {"file_path": "{root}/secret7"}),
    ("Read", {"file_path": "{root}/src/key.pem"}),
    ("Read", {"file_path": "{root}/src/a.py"}),
    ("Write", {"file_path": "{root}/gen3/x.py", "content": "x"}),
    ("Write", {"file_path": "{root}/src/x.py", "content": "x"}),
    ("WebFetch", {"url": "https://host60.example.com/a", "prompt": "x"}),
    ("WebFetch", {"url": "https://a.ask.example.com/a", "prompt": "x"}),
    ("WebFetch", {"url": "https://other.example.com/a", "prompt": "x"}),
]


def _decisions(toolbox: Toolbox, root: Path) -> list[tuple[str, str, str]]:
    session = toolbox.session("default")
    out = []
    for name, args in CALLS:
        filled = {k: v.replace("{root}", str(root)) if isinstance(v, str) else v for k, v in args.items()}
        decision = toolbox.permissions.evaluate(PermissionRequest(tool=toolbox.tools[name], input=filled,
                                                                  session=session, policy=session.policy))
        out.append((decision.decision, decision.reason, decision.source))
    return out


def _decide(toolbox: Toolbox, name: str, args: dict[str, Any]) -> Any:
    session = toolbox.session("default")
    return toolbox.permissions.evaluate(PermissionRequest(tool=toolbox.tools[name], input=args, session=session,
                                                          policy=session.policy))


def _kept() -> list[Path]:
    return sorted(layer_cache_dir().glob("compiled-*"))


class Built:
    """How the matchers of a load were made: from what was saved, or afresh."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from pegboard.plugins.fs._vote import FsRuleMatcher
        from pegboard.plugins.shell._permission import BashRule
        from pegboard.plugins.web._rules import DomainMatcher

        self.parsed = 0  # Bash rules whose words were split
        self.restored = 0  # Bash and WebFetch rules built from what was saved
        self.groups: list[bool] = []  # per fs group: whether it was given what was saved
        real_init, real_restored = BashRule.__init__, BashRule.restored.__func__  # type: ignore[attr-defined]
        real_domain, real_combine = DomainMatcher.restored.__func__, FsRuleMatcher.combine.__func__  # type: ignore[attr-defined]

        def init(matcher: Any, rule: Any) -> None:
            self.parsed += 1
            real_init(matcher, rule)

        def restored(cls: Any, *args: Any) -> Any:
            self.restored += 1
            return real_restored(cls, *args)

        def domain(cls: Any, *args: Any) -> Any:
            self.restored += 1
            return real_domain(cls, *args)

        def combine(cls: Any, matchers: Any, saved: Any = None) -> Any:
            self.groups.append(saved is not None)
            return real_combine(cls, matchers, saved)

        monkeypatch.setattr(BashRule, "__init__", init)
        monkeypatch.setattr(BashRule, "restored", classmethod(restored))
        monkeypatch.setattr(DomainMatcher, "restored", classmethod(domain))
        monkeypatch.setattr(FsRuleMatcher, "combine", classmethod(combine))


def test_the_next_process_builds_the_rules_from_what_was_kept_and_decides_the_same(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = Toolbox.load(cwd=root, plugins=PLUGINS)  # every rule checked at load: nothing deferred, nothing kept
    expected = _decisions(checked, root)
    assert {d for d, _, _ in expected} == {"allow", "ask", "deny"}
    assert _kept() == []
    deferred = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert any(isinstance(item, DeferredLayer) for item in deferred.permissions._order)
    assert _decisions(deferred, root) == expected  # compiled at first use, and kept
    assert len(_kept()) == 7  # Bash allow, deny, ask; Read deny; Write allow; WebFetch allow, ask
    built = Built(monkeypatch)
    restored = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _decisions(restored, root) == expected
    assert built.parsed == 0 and built.restored == 3 * 120 + 3  # cmd, push, host; npm run *, rm, *.ask
    assert built.groups and all(built.groups)  # every fs group from what was saved
    assert [(c.rule.text, c.layer) for c in restored.permissions.rules] == \
        [(c.rule.text, c.layer) for c in checked.permissions.rules]
    assert restored.permissions.late_problems == []
    stamps = [p.stat().st_mtime_ns for p in _kept()]
    Toolbox.load(cwd=root, plugins=PLUGINS).permissions.rules  # noqa: B018  (all compiled)
    assert [p.stat().st_mtime_ns for p in _kept()] == stamps  # nothing new to keep: nothing written


def test_a_changed_rule_means_nothing_kept_is_used(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Toolbox.load(cwd=root, plugins=PLUGINS)
    _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)  # kept
    rules = _rules(120)
    rules["allow"][119] = "Bash(make:*)"  # cmd119 no longer allowed, make now is
    rules["deny"][42] = "Read(./other/**)"
    _write(root, rules)
    checked = Toolbox.load(cwd=root, plugins=PLUGINS)
    built = Built(monkeypatch)
    assert _decide(checked, "Bash", {"command": "make"}).reason == "allowed by Bash(make:*)"
    deferred = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _decide(deferred, "Bash", {"command": "make"}).reason == "allowed by Bash(make:*)"
    assert _decide(deferred, "Bash", {"command": "cmd119 --all"}).decision == "ask"
    assert _decide(deferred, "Read", {"file_path": str(root / "secret42" / "k")}).decision == "allow"
    assert built.restored == 0 and built.parsed > 0 and not any(built.groups)  # what was kept is another rule set's
    assert _decisions(deferred, root) == _decisions(checked, root)


def test_a_changed_plugin_file_means_nothing_kept_is_used(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Toolbox.load(cwd=root, plugins=PLUGINS)
    _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)  # kept
    import pegboard.plugins.shell._permission as shell_module

    source = Path(shell_module.__file__)
    st = source.stat()
    try:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as an upgrade would
        Toolbox.load(cwd=root, plugins=PLUGINS)  # the rules are checked again at load, under a new digest
        built = Built(monkeypatch)
        toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
        _decisions(toolbox, root)
        assert built.restored == 0 and built.parsed > 0 and not any(built.groups)
    finally:
        os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_folder_that_resolves_elsewhere_now_is_not_taken_from_what_was_kept(
        root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest covers the rules and the plugins, not the disk: a folder a
    rule names that became a symlink since must still be denied where it
    now leads (what was kept named the folder as it was)."""
    Toolbox.load(cwd=root, plugins=PLUGINS)
    _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)  # kept, with secret7 a folder
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "inner").mkdir(parents=True)
    (root / "secret7").rmdir()
    (root / "secret7").symlink_to(elsewhere)
    built = Built(monkeypatch)
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    decision = _decide(toolbox, "Read", {"file_path": str(elsewhere / "inner" / "k.txt")})
    assert decision.decision == "deny" and decision.reason == "denied by Read(./secret7/**)"
    assert built.groups == [True, False]  # what was kept was tried, refused, and the group worked out again
    assert _decide(toolbox, "Read", {"file_path": str(root / "secret42" / "k.txt")}).decision == "deny"


@pytest.mark.parametrize("damage", ["garbage", "other key", "wrong shapes"])
def test_a_damaged_entry_only_costs_speed(root: Path, damage: str) -> None:
    import marshal

    expected = _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)
    _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)  # kept
    for path in _kept():
        entry = marshal.loads(path.read_bytes())
        if damage == "garbage":
            path.write_bytes(b"\x00not marshal")
            continue
        if damage == "other key":
            entry["key"] = b"x" * 32
        else:
            entry["rules"] = [["glob", "x", 1, None, None]] * len(entry["rules"] or [])
            entry["groups"] = [[name, positions, {"pathspec": "?", "rules": [], "sets": 1}]
                               for name, positions, _ in entry["groups"]]
        path.write_bytes(marshal.dumps(entry))
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _decisions(toolbox, root) == expected
    assert toolbox.permissions.late_problems == []


PLUGIN = '''
import marshal
from pegboard import RuleSamples, Tool, hookimpl

COUNTS = {"parsed": 0, "restored": 0}


class Echoed:
    def __init__(self, words):
        self.words = words

    def matches(self, request):
        return request.input.get("text", "").split()[:len(self.words)] == self.words

    def save(self):
        return {SAVED}


@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Echo", handler=lambda args, ctx: args["text"], read_only=True, description="Echoes.",
                  input_schema={"type": "object", "properties": {"text": {"type": "string"}}}))


@hookimpl
def pegboard_rule_matcher(rule, saved):
    if rule.tool != "Echo" or rule.specifier is None:
        return None
    if saved is not None:
        COUNTS["restored"] += 1
        return Echoed(list(saved))
    COUNTS["parsed"] += 1
    return Echoed(rule.specifier.split())


@hookimpl
def pegboard_rule_samples():
    return RuleSamples(rules=["Echo(a b)", "Echo(c)"],
                       calls=[("Echo", {"text": "a b c"}), ("Echo", {"text": "c"}), ("Echo", {"text": "a x"})])
'''


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, saved: str) -> str:
    folder = tmp_path / "site" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN.replace("{SAVED}", saved)))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name


def test_a_plugin_matcher_is_built_from_what_it_saved(root: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The public protocol, through a plugin of its own: ``save()`` on the
    matcher, ``saved`` on the hook."""
    import sys

    _plugin(tmp_path, monkeypatch, "echosaved", "self.words")
    _write(root, {"deny": [f"Echo(w{i} x)" for i in range(250)], "allow": ["Echo(a b)"]})
    plugins = {"echo": "echosaved"}
    Toolbox.load(cwd=root, extra_plugins=plugins, plugins=[])
    counts = sys.modules["echosaved"].COUNTS
    deferred = Toolbox.load(cwd=root, extra_plugins=plugins, plugins=[])
    assert _decide(deferred, "Echo", {"text": "w17 x y"}).reason == "denied by Echo(w17 x)"
    parsed = counts["parsed"]
    restored = Toolbox.load(cwd=root, extra_plugins=plugins, plugins=[])
    assert _decide(restored, "Echo", {"text": "w17 x y"}).reason == "denied by Echo(w17 x)"
    assert _decide(restored, "Echo", {"text": "w17 y"}).decision == "allow"  # read-only, no rule
    assert _decide(restored, "Echo", {"text": "a b"}).reason == "allowed by Echo(a b)"
    assert counts["parsed"] == parsed and counts["restored"] == 251
    assert check_plugin("echo", "echosaved", cwd=root).ok


def test_plugins_check_holds_save_to_the_same_answers(root: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin(tmp_path, monkeypatch, "echowrong", "self.words[:1]")
    _plugin(tmp_path, monkeypatch, "echounplain", "object()")
    wrong = check_plugin("echo", "echowrong", cwd=root)
    assert any("built from what its save() gave, it answers sample call 3 True, where it answered False" in p
               for p in wrong.problems), wrong.problems
    unplain = check_plugin("echo", "echounplain", cwd=root)
    assert any("save() gave what is not plain data" in p for p in unplain.problems), unplain.problems


def test_the_protected_patterns_are_kept_and_protect_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The protected paths as regular expressions kept beside the layer
    cache: the next process's first write decision takes them without
    pathspec, decides the same, and other patterns are worked out afresh."""
    from pegboard._engine.permissions import protected as _protected

    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    trust(root)

    def decisions(protected: list[str]) -> list[str]:
        cfg = tmp_path / "c.toml"
        cfg.write_text(f"[permissions]\nprotected_paths = {json.dumps(protected)}\n")
        toolbox = Toolbox.load(cwd=root, plugins=["fs"], config=cfg)
        session = toolbox.session("acceptEdits")
        return [toolbox.permissions.evaluate(PermissionRequest(
            tool=toolbox.tools["Write"], input={"file_path": str(root / rel), "content": "x"}, session=session,
            policy=session.policy)).decision for rel in (".git/config", "secrets/a", "src/x.py", "notes/b")]

    found: list[object] = []
    real = _protected._kept
    monkeypatch.setattr(_protected, "_kept", lambda patterns: found.append(real(patterns)) or found[-1])
    first = decisions(["secrets/**"])
    assert first == ["ask", "ask", "allow", "allow"] and found == [None]  # worked out, and kept
    assert decisions(["secrets/**"]) == first and found[-1] is not None  # taken as kept
    assert decisions(["secrets/**", "notes/**"]) == ["ask", "ask", "allow", "ask"] and found[-1] is None

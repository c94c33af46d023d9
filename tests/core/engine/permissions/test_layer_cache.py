"""Large config files remembered between loads (core/_loading/layer_cache.py,
core/_engine/permissions/lazy_rules.py): a file whose bytes and rules passed before is not
parsed and checked again, and still decides every call the same; a changed
byte, a damaged entry, another plugin set or the system policy means a full
parse and check at load; a remembered rule that fails when it is finally
compiled fails closed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _trusted import trust

from pegboard import ConfigError, PermissionRequest, Toolbox
from pegboard._loading.config import layer_cache_dir
from pegboard._engine.permissions.lazy_rules import DeferredLayer

PLUGINS = ["fs", "shell", "web"]


def _rules(n: int) -> dict[str, list[str]]:
    return {
        "allow": [f"Bash(cmd{i}:*)" for i in range(n)] + [f"WebFetch(domain:host{i}.example.com)" for i in range(n)]
                 + [f"Write(gen{i}/**)" for i in range(n)] + ["Nope(x)"],
        "deny": [f"Read(secret{i}/**)" for i in range(n)] + ["Bash(rm:*)"],
        "ask": [f"Bash(push{i}:*)" for i in range(n)],
    }


def _write(path: Path, rules: dict[str, list[str]], extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in rules.items())
    path.write_text(f"{extra}[permissions]\n{body}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / "gen3").mkdir()
    trust(root)
    user = layer_cache_dir().parent
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.toml").write_text('[plugins.shell]\nsandbox = "off"\n')
    _write(root / ".pegboard" / "config.toml", _rules(100))
    return root


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Bash", {"command": "cmd99 --all"}),
    ("Bash", {"command": "push7 origin"}),
    ("Bash", {"command": "rm -rf x"}),
    ("Bash", {"command": "make"}),
    ("Read", {"file_path": "{root}/secret42/k.txt"}),
    ("Read", {"file_path": "{root}/src/a.py"}),
    ("Write", {"file_path": "{root}/gen3/x.py", "content": "x"}),
    ("Write", {"file_path": "{root}/src/x.py", "content": "x"}),
    ("WebFetch", {"url": "https://host60.example.com/a", "prompt": "x"}),
    ("WebFetch", {"url": "https://other.example.com/a", "prompt": "x"}),
]


def _decisions(toolbox: Toolbox, root: Path) -> list[tuple[str, str]]:
    session = toolbox.session("default")
    out = []
    for name, args in CALLS:
        filled = {k: v.replace("{root}", str(root)) if isinstance(v, str) else v for k, v in args.items()}
        tool = toolbox.tools[name]
        decision = toolbox.permissions.evaluate(PermissionRequest(tool=tool, input=filled, session=session,
                                                                  policy=session.policy))
        out.append((decision.decision, decision.reason))
    return out


def _decide(toolbox: Toolbox, name: str, args: dict[str, Any]) -> Any:
    session = toolbox.session("default")
    return toolbox.permissions.evaluate(PermissionRequest(tool=toolbox.tools[name], input=args, session=session,
                                                          policy=session.policy))


def _deferred(toolbox: Toolbox) -> list[str]:
    return [item.layer.name for item in toolbox.permissions._order if isinstance(item, DeferredLayer)]


def test_a_file_that_passed_before_is_not_checked_again_and_decides_the_same(root: Path) -> None:
    first = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(first) == []  # checked at load, then remembered
    assert sorted(p.name.split("-")[0] for p in layer_cache_dir().iterdir()) == ["rules", "toml"]
    second = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(second) == ["project"]
    assert "_index" not in vars(second.permissions)  # nothing per rule at load
    expected = _decisions(first, root)
    assert {d for d, _ in expected} == {"allow", "ask", "deny"}
    assert _decisions(second, root) == expected
    # every rule, in file order, with the same layers; the same listing and doctor's unknown names
    assert [(c.rule.text, c.layer) for c in second.permissions.rules] == \
        [(c.rule.text, c.layer) for c in first.permissions.rules]
    assert second.permissions.listing() == first.permissions.listing()
    assert [(r.text, n) for r, n in second.permissions.unknown] == [(r.text, n) for r, n in first.permissions.unknown]
    assert [r.text for r, _ in second.permissions.unknown] == ["Nope(x)"]
    assert second.permissions.late_problems == []


def test_a_changed_byte_is_parsed_and_checked_at_load(root: Path) -> None:
    Toolbox.load(cwd=root, plugins=PLUGINS)
    config = root / ".pegboard" / "config.toml"
    rules = _rules(100)
    rules["deny"][5] = "Read(../up/**)"
    _write(config, rules)
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=root, plugins=PLUGINS)
    assert str(config) in str(caught.value) and "Read(../up/**)" in str(caught.value)
    rules["deny"][5] = "Read(other/**)"  # valid again, but not these rules' digest: checked again
    _write(config, rules)
    again = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(again) == []
    assert "Read(other/**)" in [c.rule.text for c in again.permissions.rules]


def test_a_damaged_entry_means_a_full_parse(root: Path) -> None:
    first = _decisions(Toolbox.load(cwd=root, plugins=PLUGINS), root)
    for entry in layer_cache_dir().iterdir():
        entry.write_bytes(entry.read_bytes()[:40] + b"\xff" * 7)
    again = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(again) == []
    assert _decisions(again, root) == first


def test_a_remembered_parse_of_other_bytes_is_not_used(root: Path) -> None:
    """The parsed file is remembered under its bytes' digest: an entry holding
    other data for the same file (say, without its deny rules) is not taken."""
    Toolbox.load(cwd=root, plugins=PLUGINS)
    config = root / ".pegboard" / "config.toml"
    rules = _rules(100)
    rules["deny"] = rules["deny"][:3]
    _write(config, rules)
    Toolbox.load(cwd=root, plugins=PLUGINS)  # the entry now holds the shorter file
    _write(config, _rules(100))
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert ("deny", "denied by Read(secret42/**)") in _decisions(toolbox, root)


def test_another_plugin_set_checks_the_rules_again(root: Path) -> None:
    Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(Toolbox.load(cwd=root, plugins=["fs", "shell", "web", "skills"])) == []
    assert _deferred(Toolbox.load(cwd=root, plugins=["fs", "shell", "web", "skills"])) == ["project"]
    assert _deferred(Toolbox.load(cwd=root, plugins=PLUGINS)) == ["project"]  # both sets remembered


def test_a_changed_plugin_source_file_checks_the_rules_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same version with other code (an editable install): checked again."""
    import test_permissions_plugin as support

    project = support.Project(tmp_path, monkeypatch)
    project.project_config("[permissions]\nallow = " + json.dumps([f"Bash(cmd{i}:*)" for i in range(300)]) + "\n")
    project.load()
    assert _deferred(project.load()) == ["project"]
    source = project.site / f"{support.MODULE}.py"
    source.write_text(source.read_text() + "\n# changed\n")
    assert _deferred(project.load()) == []
    assert _deferred(project.load()) == ["project"]


def test_the_system_policy_is_parsed_and_checked_every_time(root: Path) -> None:
    policy = Path(os.environ["PEGBOARD_POLICY"])
    _write(policy, {"deny": [f"Read(policy-folder-{i}/**)" for i in range(400)]})
    assert policy.stat().st_size > 8 * 1024
    Toolbox.load(cwd=root, plugins=PLUGINS)
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(toolbox) == ["project"]  # not "policy"
    # one entry of each kind, both the project file's (the user file is small)
    assert sorted(p.name.split("-")[0] for p in layer_cache_dir().iterdir()) == ["rules", "toml"]
    decision = _decide(toolbox, "Read", {"file_path": str(root / "policy-folder-399" / "x")})
    assert decision.decision == "deny" and str(policy) in decision.source


def test_a_remembered_rule_that_fails_when_compiled_fails_closed(root: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a damaged or forged cache gets here: the rules were checked before."""
    rules = _rules(100)
    rules["deny"].append("Bash(unterminated ':*)")
    rules["allow"].append("Read(../x/**)")
    rules["allow"].append("WebFetch(domain:)")
    _write(root / ".pegboard" / "config.toml", rules)
    with pytest.raises(ConfigError):
        Toolbox.load(cwd=root, plugins=PLUGINS)
    monkeypatch.setattr("pegboard._engine.permissions.engine.rules_checked", lambda *args: True)
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(toolbox) == ["project"]
    # the broken deny rule covers every Bash call now, even one an allow rule allows
    assert _decide(toolbox, "Bash", {"command": "cmd99 --all"}).reason == "denied by Bash(unterminated ':*)"
    # the broken allow rules allow nothing; the others still do
    assert _decide(toolbox, "WebFetch", {"url": "https://host60.example.com/a", "prompt": "x"}).decision == "allow"
    assert _decide(toolbox, "Read", {"file_path": "/elsewhere/x/y"}).decision == "ask"
    assert len(toolbox.permissions.rules) == len(Toolbox.load(cwd=root, plugins=PLUGINS).permissions.rules)
    problems = toolbox.permissions.late_problems
    assert any("Bash(unterminated ':*)" in p for p in problems)
    assert any("Read(../x/**)" in p for p in problems) and any("WebFetch(domain:)" in p for p in problems)


def test_a_datetime_value_is_parsed_every_time(root: Path) -> None:
    _write(root / ".pegboard" / "config.toml", _rules(100), extra="[plugins.web]\nfetch_user_agent = 1979-05-27\n")
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert "fetch_user_agent" in (toolbox.records["web"].error or "")  # parsed, and reported where it belongs
    assert not any(p.name.startswith("toml-") for p in layer_cache_dir().glob("*"))


def test_small_files_are_not_remembered(root: Path) -> None:
    _write(root / ".pegboard" / "config.toml", {"deny": ["Read(secret/**)"]})
    Toolbox.load(cwd=root, plugins=PLUGINS)
    assert list(layer_cache_dir().glob("*")) == []


def test_a_rule_added_later_and_a_grant_take_their_place(root: Path) -> None:
    Toolbox.load(cwd=root, plugins=PLUGINS)
    toolbox = Toolbox.load(cwd=root, plugins=PLUGINS)
    assert _deferred(toolbox) == ["project"]
    session = toolbox.session("default")
    toolbox.permissions.remember("Bash(make:*)", "session", session)
    where = toolbox.permissions.remember("Bash(make:*)", "user", session)
    assert where.endswith("granted.toml")
    assert ("allow", "allowed by Bash(make:*)") in _decisions(toolbox, root)
    assert [c.rule.text for c in toolbox.permissions.rules][-1] == "Bash(make:*)"

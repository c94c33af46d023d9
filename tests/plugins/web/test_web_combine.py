"""``WebFetch(domain:...)`` rules combined: one lookup per call, the same answers.

``DomainMatcher.combine`` lets the engine ask one object instead of every
rule in turn; these tests hold it to exact agreement with calling each
rule's ``matches``, over many rule sets and awkward URLs, and check that a
decision reads the URL once, and that the loopback unlocks are not worked
out again for every call.
"""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pegboard import PermissionRequest, Toolbox
from pegboard.plugins.web import _urls
from pegboard.plugins.web._rules import (
    CombinedDomains,
    DomainMatcher,
    DomainPattern,
    explicitly_allowed_hosts,
    operator_rules,
    parse_domain_specifier,
    unlocked_hosts,
)

SPECS = [
    "domain:example.com", "domain:*.example.com", "domain:a.example.com", "domain:*.a.example.com",
    "domain:Example.COM.", "domain:*.EXAMPLE.com", "domain:www.example.com", "domain:evilexample.com",
    "domain:*.com", "domain:*.co.uk", "domain:bbc.co.uk", "domain:bücher.example", "domain:*.bücher.example",
    "domain:xn--bcher-kva.example", "domain:127.0.0.1", "domain:[::1]", "domain:localhost", "domain:*.localhost",
    "domain:10.0.0.5", "domain:*.0.0.1", "domain:*.1", "domain:[2001:db8::1]", "domain:[::ffff:127.0.0.1]",
    "domain:host5.example.com", "domain:*.host5.example.com", "domain:example.com.evil.net", "domain:*.evil.net",
    "domain:notexample.com", "domain:*.b.a.example.com", "domain:x_y.example.com", "domain:*.internal",
    "domain:svc.internal", "domain:ＥＸＡＭＰＬＥ.com", "domain:*.ex-ample.com", "domain:ex-ample.com",
]

URLS: list[Any] = [
    "https://example.com/", "https://example.com", "http://example.com/x?y#z", "https://EXAMPLE.COM/",
    "https://example.com./", "https://Example.Com.:8443/x", "https://example.com:443/", "http://example.com:80/",
    "https://a.example.com/", "https://A.Example.com/", "https://a.example.com./", "https://b.a.example.com/",
    "https://c.b.a.example.com/", "https://www.example.com/", "https://evilexample.com/", "https://notexample.com/",
    "https://example.com.evil.net/", "https://x.example.com.evil.net/", "https://evil.net/?u=https://example.com/",
    "https://evil.net/example.com", "https://example.com@evil.net/", "https://user:pw@example.com/",
    "https://@example.com/", "ftp://example.com/", "file:///etc/passwd", "example.com", "//example.com/",
    "javascript:alert(1)", "https://", "", "https:///path", "https://bbc.co.uk/", "https://news.bbc.co.uk/",
    "https://co.uk/", "https://com/", "https://bücher.example/", "https://BÜCHER.example/",
    "https://xn--bcher-kva.example/", "https://shop.bücher.example/", "https://shop.xn--bcher-kva.example/",
    "https://ＥＸＡＭＰＬＥ.com/", "https://example。com/", "http://127.0.0.1/", "http://127.0.0.1:8080/x",
    "http://127.000.0.1/", "http://2130706433/", "http://0x7f000001/", "http://127.1/", "http://127.0.0.1./",
    "http://[::1]/", "http://[::1]:8080/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/",
    "http://[2001:db8::1]/", "http://[2001:DB8:0::1]:99/", "http://[fe80::1%25eth0]/", "http://[example.com]/",
    "http://localhost/", "http://LOCALHOST:3000/", "http://app.localhost/", "http://a.b.localhost./",
    "http://10.0.0.5/", "http://10.0.0.6/", "https://host5.example.com/", "https://x.host5.example.com/",
    "https://host50.example.com/", "https://host5.example.com.:1/", "https://x_y.example.com/",
    "https://svc.internal/", "https://a.svc.internal/", "https://internal/", "https://ex-ample.com/",
    "https://a.ex-ample.com/", "https://exa mple.com/", "https://example.com\\@evil.net/", "https://exa%6dple.com/",
    "https://example.com:0/", "https://example.com:99999/", "https://example.com:abc/", "https://\u200bexample.com/",
    "https://example.com/\u00e9", "HTTPS://EXAMPLE.COM/", "hTtP://a.example.com/", "https://a..example.com/",
    "https://.example.com/", "https://-.example.com/", "https://" + "a" * 64 + ".example.com/",
    "https://" + "a." * 5000 + "example.com/", 42, None, b"https://example.com/", ["https://example.com/"],
]


def _request(url: Any, *, extra: bool = True) -> SimpleNamespace:
    return SimpleNamespace(input={"url": url}, **({"extra": {}} if extra else {}))


def _matchers(specs: list[str]) -> list[DomainMatcher]:
    return [DomainMatcher(parse_domain_specifier(s)) for s in specs]


def _check_agreement(matchers: list[DomainMatcher], url: Any) -> int | None:
    individual = [m.matches(_request(url)) for m in matchers]
    combined = DomainMatcher.combine(matchers)
    for request in (_request(url), _request(url, extra=False)):
        index = combined.first_match(request)
        assert (index is None) == (not any(individual)), (url, [m.pattern.text for m in matchers])
        if index is not None:
            assert individual[index], (url, index)
            # The lowest index: the rule one-by-one matching would name.
            assert index == individual.index(True)
    return combined.first_match(_request(url))


def test_every_spec_parses() -> None:
    assert len(_matchers(SPECS)) == len(SPECS)


@pytest.mark.parametrize("url", URLS, ids=range(len(URLS)))
def test_all_rules_combined_agree_with_one_by_one(url: Any) -> None:
    matchers = _matchers(SPECS)
    _check_agreement(matchers, url)
    _check_agreement(list(reversed(matchers)), url)


@pytest.mark.slow
def test_random_rule_sets_agree_with_one_by_one() -> None:
    rng = random.Random(20261129)
    pool = SPECS + [f"domain:host{i}.example.com" for i in range(40)] + [f"domain:*.h{i}.example.com" for i in range(10)]
    urls = URLS + [f"https://host{i}.example.com/" for i in range(0, 60, 7)] + ["https://z.h3.example.com/",
                                                                               "https://h3.example.com/"]
    matched = 0
    for _ in range(150):
        specs = rng.sample(pool, rng.randint(1, 30))
        specs += rng.sample(specs, min(3, len(specs)))  # duplicates: the first one must win
        matchers = _matchers(specs)
        for url in urls:
            matched += _check_agreement(matchers, url) is not None
    assert matched > 500  # the sets do match things: agreement is not all-None


def test_specific_answers() -> None:
    matchers = _matchers(["domain:*.example.com", "domain:example.com", "domain:a.example.com"])
    combined = DomainMatcher.combine(matchers)
    assert combined.first_match(_request("https://EXAMPLE.com.:8080/")) == 1  # the wildcard is not the apex
    assert combined.first_match(_request("https://a.example.com/")) == 0  # the first rule that matches
    assert combined.first_match(_request("https://evilexample.com/")) is None  # a string suffix, not a domain one
    assert combined.first_match(_request("https://example.com.evil.net/")) is None
    assert combined.first_match(_request("https://user@a.example.com/")) is None  # refused URLs match nothing
    assert combined.first_match(_request("ftp://a.example.com/")) is None
    idna = DomainMatcher.combine(_matchers(["domain:*.bücher.example"]))
    assert idna.first_match(_request("https://Shop.BÜCHER.example./")) == 0
    assert idna.first_match(_request("https://shop.xn--bcher-kva.example/")) == 0


def test_combine_refuses_what_it_cannot_answer_for() -> None:
    class Other(DomainMatcher):
        pass

    with pytest.raises(TypeError):
        DomainMatcher.combine([DomainMatcher(DomainPattern("a.test", False)), Other(DomainPattern("b.test", False))])
    with pytest.raises(ValueError):
        DomainMatcher.combine([DomainMatcher(DomainPattern("", True))])
    assert isinstance(DomainMatcher.combine([]), CombinedDomains)
    assert DomainMatcher.combine([]).first_match(_request("https://a.test/")) is None


def test_a_request_reads_its_url_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = _urls.check_url

    def counting(url: str, **kwargs: Any) -> Any:
        calls.append(url)
        return real(url, **kwargs)

    monkeypatch.setattr(_urls, "check_url", counting)
    matchers = _matchers([f"domain:host{i}.example.com" for i in range(50)])
    request = _request("https://host49.example.com/")
    assert all(not m.matches(request) for m in matchers[:49]) and matchers[49].matches(request)
    assert DomainMatcher.combine(matchers).first_match(request) == 49
    assert calls == ["https://host49.example.com/"]
    bad = _request("https://u@host1.example.com/")
    assert not any(m.matches(bad) for m in matchers) and DomainMatcher.combine(matchers).first_match(bad) is None
    assert calls[1:] == ["https://u@host1.example.com/"]  # a refusal is remembered too
    # Another URL in the same request is read on its own (the memo is keyed by the raw URL).
    request.input["url"] = "https://host3.example.com/"
    assert DomainMatcher.combine(matchers).first_match(request) == 3
    assert calls[2:] == ["https://host3.example.com/"]


# --- the loopback unlocks ---------------------------------------------------------------------


def _rule(spec: str | None, behavior: str = "allow", source: str = "/home/u/.config/pegboard/config.toml",
          layer: str = "user") -> SimpleNamespace:
    return SimpleNamespace(rule=SimpleNamespace(tool="WebFetch", specifier=spec, behavior=behavior, source=source),
                           layer=layer)


class _Session:
    """What the web plugin asks of a session: its rules by behavior and tool (``Session.rules_for``)."""

    def __init__(self, rules: list[Any]) -> None:
        self.rules = rules

    def rules_for(self, behavior: str, tool: str) -> list[Any]:
        return [c for c in self.rules if c.rule.behavior == behavior and c.rule.tool == tool]


def test_unlocked_hosts_are_worked_out_once_per_rule_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from pegboard.plugins.web import _rules

    session = _Session([_rule("domain:localhost"), _rule("domain:*.corp"), _rule("domain:10.0.0.9", "deny")])
    counted: list[int] = []
    real = _rules.explicitly_allowed_hosts
    monkeypatch.setattr(_rules, "explicitly_allowed_hosts", lambda rules: counted.append(1) or real(rules))
    for _ in range(5):
        assert unlocked_hosts(session) == frozenset({"localhost"})
    assert len(counted) == 1
    session.rules.append(_rule("domain:10.0.0.5"))  # a rule added: worked out again
    assert unlocked_hosts(session) == frozenset({"localhost", "10.0.0.5"})
    session.rules.append(_rule("domain:10.0.0.6", source="/home/u/.config/pegboard/granted.toml"))
    assert unlocked_hosts(session) == frozenset({"localhost", "10.0.0.5"})
    session.rules.append(_rule("domain:10.0.0.7", source="/p/.pegboard/config.toml", layer="project"))
    assert unlocked_hosts(session) == frozenset({"localhost", "10.0.0.5"})  # a project's rule unlocks nothing
    assert len(counted) == 4
    session.rules = [_rule("domain:[::1]")]  # a new list
    assert unlocked_hosts(session) == frozenset({"::1"})
    # Odd sessions get what operator_rules makes of them, uncached.
    for odd in (None, SimpleNamespace(), SimpleNamespace(rules_for=lambda behavior, tool: [_rule("domain:localhost")])):
        assert unlocked_hosts(odd) == real(operator_rules(odd))


# --- through a Toolbox ------------------------------------------------------------------------


def _config(tmp_path: Path) -> Path:
    allow = [f"WebFetch(domain:host{i}.example.com)" for i in range(200)]
    allow += [f"WebFetch(domain:*.zone{i}.example.com)" for i in range(60)]
    allow += ["WebFetch(domain:localhost)", "WebFetch(domain:[::1])", "WebFetch(domain:*.example.org)",
              "WebFetch(domain:host7.example.com)", "WebFetch(domain:bücher.example)"]
    deny = [f"WebFetch(domain:bad{i}.example.com)" for i in range(50)] + ["WebFetch(domain:*.evil.example.com)"]
    ask = [f"WebFetch(domain:ask{i}.example.com)" for i in range(30)] + ["WebFetch(domain:*.ask.example.org)"]
    lines = ["[permissions]"]
    for key, rules in (("allow", allow), ("deny", deny), ("ask", ask)):
        lines.append(f"{key} = [" + ", ".join(f'"{r}"' for r in rules) + "]")
    cfg = tmp_path / "web.toml"
    cfg.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cfg


E2E_URLS = [
    "https://host0.example.com/", "https://host150.example.com/a", "https://HOST199.example.com.:8443/",
    "https://host200.example.com/", "https://host7.example.com/", "https://a.zone3.example.com/",
    "https://zone3.example.com/", "https://x.y.zone59.example.com/", "https://bad3.example.com/",
    "https://x.evil.example.com/", "https://evil.example.com/", "https://ask5.example.com/",
    "https://q.ask.example.org/", "https://ask.example.org/", "https://www.example.org/", "https://example.org/",
    "http://localhost:8000/", "http://127.0.0.1/", "http://[::1]:9/", "http://10.0.0.1/",
    "https://bücher.example/", "https://xn--bcher-kva.example/", "https://evilexample.com/",
    "https://user@host1.example.com/", "ftp://host1.example.com/", "https://2130706433/", "not a url",
]


def _decide(tb: Toolbox, session: Any, url: str) -> tuple[str, str, str]:
    tool = tb.tools["WebFetch"]
    request = PermissionRequest(tool=tool, input={"url": url, "prompt": "x"}, session=session, policy=session.policy)
    decision = tb.permissions.evaluate(request)
    return decision.decision, decision.reason, decision.source


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk", "bypassPermissions"])
def test_toolbox_decisions_match_one_by_one(tmp_path: Path, mode: str) -> None:
    from pegboard._engine.permissions.engine import _Group

    tb = Toolbox.load(cwd=tmp_path, plugins=["web"], config=_config(tmp_path))
    session = tb.session(mode)
    engine = tb.permissions
    combined = {url: _decide(tb, session, url) for url in E2E_URLS}
    # The domain rules really were combined: one group per behavior.
    for behavior in ("allow", "deny", "ask"):
        units = engine._plans[behavior]["WebFetch"]
        assert len(units) == 1 and isinstance(units[0], _Group), behavior
    engine._plans = {b: {t: list(engine._compiled(b, t)) for t in list(engine._index[b])} for b in engine._index}
    one_by_one = {url: _decide(tb, session, url) for url in E2E_URLS}
    assert combined == one_by_one
    assert combined["https://host150.example.com/a"][0] == "allow"
    assert combined["https://bad3.example.com/"][0] == "deny"
    assert combined["http://localhost:8000/"][0] == "allow"  # unlocked by an explicit allow rule
    assert combined["http://127.0.0.1/"][0] == "deny"  # not unlocked


def test_a_remembered_rule_does_not_unlock_a_loopback_address(tmp_path: Path) -> None:
    tb = Toolbox.load(cwd=tmp_path, plugins=["web"], config=_config(tmp_path))
    session = tb.session("default")
    assert _decide(tb, session, "http://127.0.0.1/")[0] == "deny"
    tb.permissions.remember("WebFetch(domain:127.0.0.1)", "project", session)
    assert _decide(tb, session, "http://127.0.0.1/")[0] == "deny"
    assert "127.0.0.1" not in explicitly_allowed_hosts(operator_rules(session))

"""The web plugin inside a real Toolbox: registration, config, permission votes,
rule specifiers, the summariser hook. No traffic leaves 127.0.0.1: calls to
outside names are stopped by a deny rule or by the host's "no"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_web_support import Server, Trap, html_page, loopback_only, serve, static, trap  # noqa: F401

from pegboard import Answer, ConfigError, Toolbox, hookimpl
from pegboard.plugins.web._cache import shared_cache

pytestmark = [pytest.mark.timeout(60)]



@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    shared_cache(900, 64).clear()


class Host:
    """Records every ask; answers with ``answer`` (a refusal by default)."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.asks: list[tuple[str, Any]] = []
        self.answer = answer or Answer(allow=False, message="not now")

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asks.append((request.tool.name, decision))
        return self.answer


def load(tmp_path: Path, toml: str = "", host: object | None = None) -> Toolbox:
    cfg = tmp_path / "web.toml"
    cfg.write_text(toml, encoding="utf-8")
    return Toolbox.load(cwd=tmp_path, plugins=["web"], config=cfg, host=host)


# --- registration and config ----------------------------------------------------------------


def test_webfetch_is_registered_deferred_read_only_and_websearch_needs_a_key(tmp_path: Path) -> None:
    tb = load(tmp_path)
    assert tb.records["web"].error is None
    fetch = tb.tools["WebFetch"]
    assert (fetch.read_only, fetch.loading, fetch.permission) == (True, "deferred", "read")
    assert "WebSearch" not in tb.tools
    assert "offset" in fetch.schema["properties"] and fetch.schema["required"] == ["url", "prompt"]
    assert "public internet" in tb.description(fetch)


def test_websearch_appears_with_a_key_from_config_or_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tb = load(tmp_path, '[plugins.web]\nsearch_api_key = "tvly-x"\n')
    search = tb.tools["WebSearch"]
    assert (search.read_only, search.loading) == (True, "deferred")
    assert "query" in search.schema["required"]
    assert "snippet" in tb.description(search)
    monkeypatch.setenv("PEGBOARD_WEB_SEARCH_API_KEY", "tvly-env")
    assert "WebSearch" in load(tmp_path).tools


def test_unknown_config_keys_are_errors(tmp_path: Path) -> None:
    tb = load(tmp_path, "[plugins.web]\ntimeout = 5\n")
    assert tb.records["web"].error is not None and "timeout" in tb.records["web"].error


def test_bad_rule_specifiers_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, '[permissions]\nallow = ["WebFetch(example.com)"]\n')
    assert "domain:" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load(tmp_path, '[plugins.web]\nsearch_api_key = "k"\n[permissions]\nallow = ["WebSearch(domain:x.com)"]\n')
    assert "no specifier" in str(info.value)


# --- permissions ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_fetch_of_a_new_host_asks_and_offers_a_domain_rule(tmp_path: Path) -> None:
    host = Host()
    async with load(tmp_path, host=host).session() as session:
        result = await session.call("WebFetch", {"url": "https://Docs.Example.com/a", "prompt": "p"})
    assert result.is_error and "not now" in result.text_content()
    [(name, decision)] = host.asks
    assert name == "WebFetch" and decision.suggestions[0] == "WebFetch(domain:docs.example.com)"


@pytest.mark.anyio
async def test_domain_rules_match_hosts_not_prefixes(tmp_path: Path) -> None:
    host = Host()
    toml = '[permissions]\ndeny = ["WebFetch(domain:example.com)", "WebFetch(domain:*.internal.test)"]\n'
    async with load(tmp_path, toml, host=host).session() as session:
        denied = await session.call("WebFetch", {"url": "https://EXAMPLE.com./x", "prompt": "p"})
        sub = await session.call("WebFetch", {"url": "https://a.b.internal.test/", "prompt": "p"})
        lookalike = await session.call("WebFetch", {"url": "https://example.com.evil.test/", "prompt": "p"})
    assert "denied by WebFetch(domain:example.com)" in denied.text_content()
    assert "denied by WebFetch(domain:*.internal.test)" in sub.text_content()
    # Not matched by the deny rule: it went on to ask the person (who said no).
    assert [d.suggestions[0] for _, d in host.asks] == ["WebFetch(domain:example.com.evil.test)"]
    assert "not now" in lookalike.text_content()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["default", "bypassPermissions", "acceptEdits"])
@pytest.mark.parametrize("allow_rule", ["", '[permissions]\nallow = ["WebFetch"]\n'])
async def test_loopback_is_refused_whatever_the_mode_or_a_bare_rule(
    tmp_path: Path, trap: Trap, mode: str, allow_rule: str
) -> None:
    host = Host(Answer(allow=True))
    async with load(tmp_path, allow_rule, host=host).session(mode) as session:
        result = await session.call("WebFetch", {"url": f"http://127.0.0.1:{trap.port}/", "prompt": "p"})
        named = await session.call("WebFetch", {"url": f"http://localhost:{trap.port}/", "prompt": "p"})
    assert result.is_error and "loopback" in result.text_content()
    assert "WebFetch(domain:127.0.0.1)" in result.text_content()
    assert named.is_error and "loopback" in named.text_content()
    assert host.asks == []  # refused outright: nobody is asked about a call that cannot run
    assert not trap.touched()


@pytest.mark.anyio
async def test_a_hostname_approved_by_the_person_still_cannot_reach_loopback(
    tmp_path: Path, trap: Trap, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A name (so the person is asked) whose DNS answer is loopback, as in a
    # rebinding attack. The person says "always allow"; the address is still
    # refused at connect time, because only an operator's config unlocks it.
    from pegboard.plugins.web import _transport

    async def fake_dns(host: str, port: int) -> list[str]:
        assert host == "intranet.test"
        return ["127.0.0.1"]

    monkeypatch.setattr(_transport, "resolve", fake_dns)
    host = Host(Answer(allow=True, remember="session"))
    async with load(tmp_path, host=host).session() as session:
        url = f"https://intranet.test:{trap.port}/"
        first = await session.call("WebFetch", {"url": url, "prompt": "p"})
        second = await session.call("WebFetch", {"url": url, "prompt": "p"})
    assert [d.suggestions[0] for _, d in host.asks] == ["WebFetch(domain:intranet.test)"]  # asked once
    for result in (first, second):
        assert result.is_error and "resolves to 127.0.0.1, which is a loopback address" in result.text_content()
    assert not trap.touched()


@pytest.mark.anyio
async def test_explicit_operator_rule_unlocks_loopback_and_fetches(
    tmp_path: Path, serve: Callable[..., Server]
) -> None:
    srv = serve({"/": html_page("Local", "<p>served locally</p>")})
    host = Host()
    toml = '[permissions]\nallow = ["WebFetch(domain:127.0.0.1)"]\n[plugins.web]\nwindow_chars = 5000\n'
    async with load(tmp_path, toml, host=host).session() as session:
        result = await session.call("WebFetch", {"url": srv.url("/"), "prompt": "what is served?"})
        again = await session.call("WebFetch", {"url": srv.url("/"), "prompt": "again?"})
    text = result.text_content()
    assert not result.is_error, text
    assert "served locally" in text and "at most 5,000 characters" in text
    assert "served from cache" in again.text_content()
    assert host.asks == [] and srv.hits("/") == 1


@pytest.mark.anyio
async def test_host_summariser_hook_answers(tmp_path: Path, serve: Callable[..., Server]) -> None:
    srv = serve({"/": static("The capital of France is Paris.", "text/plain")})

    class Summariser:
        calls: list[dict[str, str]] = []

        @hookimpl
        def pegboard_summarize(self, prompt: str, content: str, url: str) -> str:
            self.calls.append({"prompt": prompt, "content": content, "url": url})
            return "Paris."

    toml = '[permissions]\nallow = ["WebFetch(domain:127.0.0.1)"]\n'
    summariser = Summariser()
    async with load(tmp_path, toml, host=summariser).session() as session:
        result = await session.call("WebFetch", {"url": srv.url("/"), "prompt": "capital?"})
    assert "Paris." in result.text_content() and "A model answered" in result.text_content()
    assert summariser.calls[0]["prompt"] == "capital?" and "Paris" in summariser.calls[0]["content"]


@pytest.mark.anyio
async def test_websearch_asks_then_searches(tmp_path: Path, serve: Callable[..., Server]) -> None:
    def route(h: Any) -> None:
        h.send_text(200, json.dumps({"results": [{"title": "T", "url": "https://a.test/", "content": "c"}]}),
                    "application/json")

    srv = serve({"/search": route})
    host = Host(Answer(allow=True))
    toml = f'[plugins.web]\nsearch_api_key = "k"\nsearch_base_url = "{srv.url("")}"\n'
    async with load(tmp_path, toml, host=host).session() as session:
        result = await session.call("WebSearch", {"query": "anything"})
    assert [name for name, _ in host.asks] == ["WebSearch"]
    assert "1. T\n   https://a.test/" in result.text_content()


@pytest.mark.anyio
async def test_bad_urls_are_denied_before_anything_runs(tmp_path: Path) -> None:
    host = Host(Answer(allow=True))
    async with load(tmp_path, host=host).session("bypassPermissions") as session:
        for url in ("file:///etc/passwd", "https://u:p@example.com/", "http://2130706433/", "http://ｌｏｃａｌｈｏｓｔ/",
                    "http://[::ffff:169.254.169.254]/", "https://example.com/ x"):
            result = await session.call("WebFetch", {"url": url, "prompt": "p"})
            assert result.is_error and "Permission denied" in result.text_content(), url
    assert host.asks == []


def test_doctor_reports_search_and_unlocked_hosts(tmp_path: Path) -> None:
    toml = ('[permissions]\nallow = ["WebFetch(domain:intranet.test)", "WebFetch(domain:*.corp.test)"]\n'
            '[plugins.web]\nsearch_api_key = "k"\n')
    tb = load(tmp_path, toml)
    from pegboard.plugins import web

    checks = {c.name: c for c in web.pegboard_doctor(tb.plugin_config("web"), tb.context_for("web"))}
    assert checks["libraries"].status == "ok"
    assert "WebSearch is offered" in checks["search"].detail
    assert checks["unlocked hosts"].status == "warn"
    assert checks["unlocked hosts"].detail.endswith(": intranet.test")


def test_search_base_url_must_be_http(tmp_path: Path) -> None:
    tb = load(tmp_path, '[plugins.web]\nsearch_base_url = "file:///tmp/x"\n')
    assert tb.records["web"].error is not None and "search_base_url" in tb.records["web"].error

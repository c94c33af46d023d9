"""The pure parts of the web plugin: URL checks, address classes, domain rules, conversion, cache."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from types import SimpleNamespace

import pytest

from pegboard.plugins.web._addresses import blocked_reason, canonical_host, numeric_host_problem
from pegboard.plugins.web._cache import CachedPage, PageCache
from pegboard.plugins.web._convert import PageText
from _web_whole import convert
from pegboard.plugins.web._rules import DomainMatcher, explicitly_allowed_hosts, operator_rules, parse_domain_specifier
from pegboard.plugins.web._urls import BadURL, check_url

# --- URLs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/x", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("javascript:alert(1)", "Only http and https"),
        ("example.com/page", "Only http and https"),
        ("https://user:pw@example.com/", "user name or password"),
        ("https://user@example.com/", "user name or password"),
        ("https://example.com@evil.net/", "user name or password"),
        ("https://example.com\\@evil.net/", "backslash"),
        ("https:\\\\example.com/", "backslash"),
        ("https://example.com/a b", "whitespace"),
        ("https://example.com/\t", "whitespace"),
        ("https://exa\nmple.com/", "whitespace"),
        ("https://example.com/\x00", "U+0000"),
        ("https://example.com/\x7f", "U+007F"),
        ("https://example.com/\u200b", "U+200B"),
        ("https://example.com\u3000/", "whitespace"),
        ("https:///path", "no host"),
        ("https://[::1/", "does not parse"),
        ("https://[zzzz]/", "does not parse"),
        ("https://example.com:99999/", "port"),
        ("https://example.com:0/", "Port 0"),
        ("https://exa%41mple.com/", "Percent-encoded"),
        ("", "empty"),
    ],
)
def test_bad_urls_are_refused_with_a_reason(url: str, why: str) -> None:
    with pytest.raises(BadURL) as info:
        check_url(url)
    assert why in str(info.value)


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.1", "0x7f.0.0.1", "017700000001", "1.2.3.04",
     "127.0.0.1.", "0", "0x", "4294967295", "www.0x10"],
)
def test_numeric_ipv4_spellings_are_refused(host: str) -> None:
    assert numeric_host_problem(host) is not None
    with pytest.raises(BadURL):
        check_url(f"http://{host}/")


@pytest.mark.parametrize("host", ["127.0.0.1", "93.184.215.14", "example.com", "1password.com", "a1.b2", "x.123abc"])
def test_plain_hosts_are_not_numeric_encodings(host: str) -> None:
    assert numeric_host_problem(host) is None


def test_http_is_upgraded_except_for_loopback() -> None:
    t = check_url("http://Example.COM./a?b=1#frag")
    assert (t.url, t.host, t.upgraded) == ("https://example.com/a?b=1", "example.com", True)
    assert check_url("http://example.com:80/").url == "https://example.com/"
    assert check_url("http://example.com:8080/").url == "https://example.com:8080/"
    for url in ("http://localhost:8000/", "http://127.0.0.1:8000/x", "http://[::1]:8000/", "http://a.localhost/"):
        t = check_url(url)
        assert t.scheme == "http" and not t.upgraded, url
    # 127/8 is loopback as a whole, not just .1
    assert not check_url("http://127.5.6.7/").upgraded


def test_idn_hosts_are_punycoded() -> None:
    assert check_url("https://Bücher.example/").host == "xn--bcher-kva.example"


def test_unicode_lookalikes_are_judged_after_mapping() -> None:
    # IDNA mapping folds full-width letters and digits and ideographic dots to
    # ASCII; the checks run on the result, as the connection would.
    assert check_url("http://ｌｏｃａｌｈｏｓｔ/").host == "localhost"
    assert check_url("http://１２７.０.０.１/").host == "127.0.0.1"
    assert check_url("http://127。0。0。1/").host == "127.0.0.1"
    for url in ("http://１２７.１/", "http://０ｘ７ｆ０００００１/"):
        with pytest.raises(BadURL):
            check_url(url)


# --- address classes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "documentation"),
        ("192.0.0.8", "IETF"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fd00:ec2::254", "cloud metadata"),
        ("fc00::1", "unique-local"),
        ("fdff::1", "unique-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%1", "scoped"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),  # any mapped form: the embedded address decides the route
        ("::127.0.0.1", "IPv4-compatible"),
        ("::ffff:0:7f00:1", "IPv4-translated"),
        ("64:ff9b::7f00:1", "NAT64"),
        ("64:ff9b:1::a00:1", "NAT64"),
        ("2002:7f00:1::1", "6to4"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("2001:db8::1", "documentation"),
        ("100::1", "discard"),
        ("4000::1", "reserved"),
    ],
)
def test_non_public_addresses_are_classified(address: str, words: str) -> None:
    reason = blocked_reason(ipaddress.ip_address(address))
    assert reason is not None and words in reason, (address, reason)


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1",
                                     "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"])
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


# --- domain rules ------------------------------------------------------------------------


def _req(url: object) -> SimpleNamespace:
    return SimpleNamespace(input={"url": url})


def test_domain_rule_matches_the_parsed_host_only() -> None:
    m = DomainMatcher(parse_domain_specifier("domain:example.com"))
    assert m.matches(_req("https://example.com/x"))
    assert m.matches(_req("http://EXAMPLE.com.:8443/x"))
    for url in ("https://example.com.evil.net/", "https://notexample.com/", "https://www.example.com/",
                "https://evil.net/?u=https://example.com/", "https://evil.net/example.com",
                "https://example.com@evil.net/", "not a url", 42):
        assert not m.matches(_req(url)), url


def test_wildcard_domain_rule_covers_subdomains_not_the_apex() -> None:
    m = DomainMatcher(parse_domain_specifier("domain:*.Example.com"))
    assert m.matches(_req("https://a.example.com/")) and m.matches(_req("https://a.b.example.com/"))
    assert not m.matches(_req("https://example.com/"))
    assert not m.matches(_req("https://badexample.com/"))
    assert not m.matches(_req("https://a.example.com.evil.net/"))


@pytest.mark.parametrize("spec", ["example.com", "domain:", "domain:https://example.com", "domain:example.com/x",
                                  "domain:ex*ample.com", "domain:*.*.com", "domain:example.com:443", "host:x.com",
                                  "domain:*.[::1]", "domain:exa mple.com"])
def test_bad_domain_specifiers_do_not_parse(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_domain_specifier(spec)


def test_ip_and_ipv6_specifiers() -> None:
    assert parse_domain_specifier("domain:127.0.0.1").host == "127.0.0.1"
    assert parse_domain_specifier("domain:[::1]").host == "::1"
    m = DomainMatcher(parse_domain_specifier("domain:[::1]"))
    assert m.matches(_req("http://[::1]:8080/"))


def test_only_exact_allow_rules_unlock_hosts() -> None:
    def rule(tool: str, spec: str | None, behavior: str = "allow", source: str = "/p/.pegboard/config.toml"):
        return SimpleNamespace(tool=tool, specifier=spec, behavior=behavior, source=source)

    rules = [
        rule("WebFetch", "domain:LocalHost"),
        rule("WebFetch", "domain:*.corp.example"),  # wildcard: no unlock
        rule("WebFetch", None),  # bare: no unlock
        rule("WebFetch", "domain:10.0.0.5", behavior="ask"),
        rule("WebFetch", "domain:10.0.0.6", behavior="deny"),
        rule("Read", "domain:10.0.0.7"),
        rule("WebFetch", "garbage"),
    ]
    assert explicitly_allowed_hosts(rules) == frozenset({"localhost"})


def test_operator_rules_skip_remembered_approvals_and_survive_odd_sessions() -> None:
    Rule = SimpleNamespace
    compiled = [
        SimpleNamespace(rule=Rule(tool="WebFetch", specifier="domain:a.test", behavior="allow",
                                  source="/home/u/.config/pegboard/config.toml"), layer="user"),
        SimpleNamespace(rule=Rule(tool="WebFetch", specifier="domain:b.test", behavior="allow",
                                  source="/home/u/.config/pegboard/granted.toml"), layer="user grants"),
        SimpleNamespace(rule=Rule(tool="WebFetch", specifier="domain:c.test", behavior="allow",
                                  source="/p/.pegboard/config.toml"), layer="project"),
        SimpleNamespace(rule=Rule(tool="WebFetch", specifier="domain:d.test", behavior="allow",
                                  source="/etc/pegboard/policy.toml"), layer="policy"),
        SimpleNamespace(rule=Rule(tool="WebFetch", specifier="domain:e.test", behavior="allow",
                                  source="/p/.pegboard/config.toml")),  # no layer: unlocks nothing
    ]
    session = SimpleNamespace(rules_for=lambda behavior, tool: [c for c in compiled if c.rule.behavior == behavior
                                                                  and c.rule.tool == tool])
    assert explicitly_allowed_hosts(operator_rules(session)) == frozenset({"a.test", "d.test"})
    assert operator_rules(SimpleNamespace()) == []
    assert operator_rules(None) == []


def test_canonical_host() -> None:
    assert canonical_host("Example.COM.") == "example.com"
    assert canonical_host("[::FFFF:127.0.0.1]") == "::ffff:7f00:1"
    with pytest.raises(ValueError):
        canonical_host("a..b")


# --- conversion ---------------------------------------------------------------------------


def test_html_becomes_markdown_without_scripts_and_with_absolute_links() -> None:
    html = (b"<html><head><title> The  Title </title><style>p{}</style><script>var secret=1</script></head>"
            b"<body><h1>Head</h1><p>Some <b>bold</b> <a href='/next?a=1'>link</a></p>"
            b"<noscript>nojs</noscript><ul><li>one</li><li>two</li></ul></body></html>")
    out = convert(html, "text/html; charset=utf-8", "https://site.test/dir/page")
    assert out.kind == "html" and out.title == "The Title"
    assert "# Head" in out.text and "**bold**" in out.text
    assert "[link](https://site.test/next?a=1)" in out.text
    assert "- one" in out.text
    for gone in ("secret", "p{}", "nojs", "The  Title"):
        assert gone not in out.text


def test_text_passes_through_and_charsets_are_honoured() -> None:
    assert convert(b'{"a": 1}', "application/json", "https://x.test/").text == '{"a": 1}'
    assert convert("é".encode("latin-1"), "text/plain; charset=iso-8859-1", "https://x.test/").text == "é"
    meta = '<html><head><meta charset="windows-1252"></head><body><p>caf\xe9</p></body></html>'.encode("cp1252")
    assert "café" in convert(meta, "text/html", "https://x.test/").text
    assert convert(b"plain words", "", "https://x.test/").kind == "text"
    assert convert(b"<!DOCTYPE html><p>hi</p>", None, "https://x.test/").kind == "html"


@pytest.mark.parametrize(("body", "ctype"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
    (b"%PDF-1.7 ...", "application/pdf"),
    (b"\x00\x01\x02binary", "application/octet-stream"),
    (b"\x00\x01\x02binary", ""),
    (b"text with a \x00 NUL", "text/plain"),
    (b"\xff\xfe\xfa\xfb" * 400, ""),
])
def test_binary_bodies_are_recognised(body: bytes, ctype: str) -> None:
    assert convert(body, ctype, "https://x.test/").kind == "binary"


# --- cache --------------------------------------------------------------------------------


def _page(url: str, text: str = "x") -> CachedPage:
    return CachedPage(url, 200, "text/plain", "text", None, PageText.whole(text), len(text), False)


def test_cache_expires_by_ttl_and_finds_pages_by_requested_or_final_url() -> None:
    now = [1000.0]
    cache = PageCache(ttl_s=900, clock=lambda: now[0])
    cache.put("https://a.test/start", _page("https://a.test/final"))
    assert cache.get("https://a.test/start") is not None
    assert cache.get("https://a.test/final") is not None
    now[0] += 899
    assert cache.get("https://a.test/final") is not None
    now[0] += 1
    assert cache.get("https://a.test/final") is None
    assert cache.get("https://a.test/start") is None


def test_cache_evicts_least_recently_used() -> None:
    cache = PageCache(ttl_s=900, max_entries=2)
    for name in "abc":
        cache.put(f"https://{name}.test/", _page(f"https://{name}.test/"))
    assert len(cache) == 2 and cache.get("https://a.test/") is None
    cache = PageCache(ttl_s=900, max_chars=10)
    cache.put("u1", _page("u1", "12345"))
    cache.put("u2", _page("u2", "123456"))
    assert cache.get("u1") is None and cache.get("u2") is not None
    off = PageCache(ttl_s=0)
    off.put("u", _page("u"))
    assert off.get("u") is None


# --- start-up -------------------------------------------------------------------------------


def test_plugin_import_stays_light() -> None:
    code = (
        "import sys, pegboard.plugins.web as w\n"
        "w.pegboard_config_model()\n"
        "heavy = [m for m in ('httpx', 'httpcore', 'html_to_markdown', 'anyio') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"plugins/web/__init__ imported {out.stdout.strip()}"


def test_scripts_styles_and_comments_are_stripped_whatever_their_case() -> None:
    html = (b"<html><body><SCRIPT type='x'>if (a<b) document.write('<p>inscript</p>')</SCRIPT ><p>kept</p>"
            b"<!-- <p>commented</p> --><Style>.x{}</Style><svg><text>vector</text></svg><p>also kept</p>"
            b"<script>unterminated")
    out = convert(html, "text/html", "https://x.test/").text
    assert "kept" in out and "also kept" in out
    for gone in ("inscript", "commented", ".x{}", "vector", "unterminated"):
        assert gone not in out


def test_deeply_nested_html_falls_back_to_plain_text() -> None:
    html = (b"<html><head><title>Deep</title></head><body><p>top</p>" + b"<div>" * 5000
            + b"deep text<script>hidden()</script>" + b"</div>" * 5000 + b"</body></html>")
    out = convert(html, "text/html", "https://x.test/")
    assert out.kind == "html" and out.title == "Deep"
    assert "too deeply" in out.text and "deep text" in out.text and "top" in out.text
    assert "hidden" not in out.text


def test_identifiers_are_not_backslash_escaped() -> None:
    out = convert(b"<p>call my_func(*args) now</p>", "text/html", "https://x.test/").text
    assert out == "call my_func(*args) now"

"""Every refused address class, proven on the wire.

Loopback forms point at a real listener (``trap``) that must not receive a
connection. Other non-public classes cannot be reached from here and must
never be tried: those go through a recording backend that would log any
dial (and the ``loopback_only`` guard fails a test that reaches the real
connector with a non-loopback address).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from test_web_support import RecordingBackend, Trap, loopback_only, resolver_from, trap  # noqa: F401

from pegboard.plugins.web._cache import PageCache
from pegboard.plugins.web._models import WebConfig, WebFetchInput
from pegboard.plugins.web._webfetch import run_fetch

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]



def rule(spec: str | None, behavior: str = "allow", source: str = "/cfg/config.toml") -> Any:
    return SimpleNamespace(tool="WebFetch", specifier=spec, behavior=behavior, source=source)


async def go(url: str, rules: list[Any] | None = None, **kw: Any) -> Any:
    return await run_fetch(WebFetchInput(url=url, prompt="p"), WebConfig(timeout_s=10), rules=rules or [],
                           cache=PageCache(), **kw)


LOOPBACK_FORMS = [
    ("127.0.0.1", "loopback"),
    ("localhost", "loopback"),
    ("127.1", "non-standard spelling"),
    ("2130706433", "non-standard spelling"),
    ("0x7f000001", "non-standard spelling"),
    ("0177.0.0.1", "non-standard spelling"),
    ("0x7f.1", "non-standard spelling"),
    ("[::ffff:127.0.0.1]", "IPv4-mapped"),
    ("[::ffff:7f00:1]", "IPv4-mapped"),
    ("[::127.0.0.1]", "IPv4-compatible"),
    ("0.0.0.0", "unspecified"),
    ("[::]", "unspecified"),
    ("[::1]", "loopback"),
    ("ｌｏｃａｌｈｏｓｔ", "loopback"),  # full-width letters fold to localhost
    ("１２７.０.０.１", "loopback"),
    ("１２７.１", "non-standard spelling"),
]


@pytest.mark.parametrize(("host", "words"), LOOPBACK_FORMS)
async def test_loopback_forms_are_refused_before_connecting(trap: Trap, host: str, words: str) -> None:
    result = await go(f"http://{host}:{trap.port}/")
    assert result.is_error
    assert words in result.text_content()
    assert not trap.touched()


async def test_the_trap_would_notice_a_connection(trap: Trap) -> None:
    # The same call with the host unlocked does connect: the refusals above are real.
    # The trap never answers, so this call ends at its (short) time limit.
    result = await run_fetch(WebFetchInput(url=f"http://127.0.0.1:{trap.port}/", prompt="p"),
                             WebConfig(timeout_s=0.3), rules=[rule("domain:127.0.0.1")], cache=PageCache())
    assert result.is_error and "Timed out" in result.text_content()
    assert trap.touched()


@pytest.mark.parametrize(
    "rules",
    [
        [rule(None)],  # a bare WebFetch allow rule
        [rule("domain:*.localhost"), rule("domain:*.0.0.1")],  # wildcards are not explicit
        [rule("domain:127.0.0.1", behavior="ask")],
        [rule("domain:127.0.0.1", source="/home/u/.config/pegboard/granted.toml")],  # a remembered click
        [rule("domain:localhost")],  # names localhost, not the address
    ],
    ids=["bare", "wildcard", "ask-rule", "remembered-approval", "other-host"],
)
async def test_only_an_explicit_operator_rule_unlocks_an_address(trap: Trap, rules: list[Any]) -> None:
    result = await go(f"http://127.0.0.1:{trap.port}/", rules=rules)
    assert result.is_error and "loopback" in result.text_content()
    assert not trap.touched()


async def test_explicit_unlock_does_not_cover_other_spellings(trap: Trap) -> None:
    for host in ("2130706433", "127.1", "[::ffff:127.0.0.1]"):
        result = await go(f"http://{host}:{trap.port}/", rules=[rule("domain:127.0.0.1")])
        assert result.is_error, host
    assert not trap.touched()


async def test_names_resolving_to_loopback_are_refused(trap: Trap) -> None:
    resolver = resolver_from({"rebind.test": ["127.0.0.1"], "mixed.test": ["93.184.215.14", "127.0.0.1"]})
    for name in ("rebind.test", "mixed.test"):
        result = await go(f"https://{name}:{trap.port}/", resolver=resolver, rules=[rule(None)])
        text = result.text_content()
        assert result.is_error and f"{name} resolves to 127.0.0.1, which is a loopback address" in text
        assert "WebFetch(domain:" in text  # says how an operator would unlock it
    assert not trap.touched()


UNREACHABLE_CLASSES = [
    ("10.0.0.1", "private"),
    ("172.20.1.1", "private"),
    ("192.168.0.1", "private"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.10.10", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("198.18.0.1", "benchmarking"),
    ("224.0.0.1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("[fd00:ec2::254]", "cloud metadata"),
    ("[fd12:3456::1]", "unique-local"),
    ("[fe80::1]", "link-local"),
    ("[ff02::1]", "multicast"),
    ("[64:ff9b::a9fe:a9fe]", "NAT64"),
    ("[2002:a9fe:a9fe::1]", "6to4"),
    ("[::ffff:169.254.169.254]", "IPv4-mapped"),
    ("[::ffff:10.0.0.1]", "IPv4-mapped"),
    ("0xa9fea9fe", "non-standard spelling"),
    ("2852039166", "non-standard spelling"),
    ("012.0.0.1", "non-standard spelling"),
]


@pytest.mark.parametrize(("host", "words"), UNREACHABLE_CLASSES)
async def test_non_public_addresses_are_never_dialled(host: str, words: str) -> None:
    dialler = RecordingBackend()
    result = await go(f"https://{host}/", inner=dialler)
    assert result.is_error and words in result.text_content(), result.text_content()
    assert dialler.dialled == []


@pytest.mark.parametrize(("address", "words"), [(h.strip("[]"), w) for h, w in UNREACHABLE_CLASSES[:18]])
async def test_names_resolving_to_non_public_addresses_are_never_dialled(address: str, words: str) -> None:
    dialler = RecordingBackend()
    resolver = resolver_from({"inside.test": ["93.184.215.14", address]})
    result = await go("https://inside.test/", resolver=resolver, inner=dialler, rules=[rule(None)])
    assert result.is_error and words in result.text_content(), result.text_content()
    assert dialler.dialled == []


async def test_a_public_name_is_dialled_at_exactly_the_vetted_address() -> None:
    dialler = RecordingBackend()
    resolver = resolver_from({"public.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})
    result = await go("https://public.test/", resolver=resolver, inner=dialler)
    # The recording backend refuses every dial, so the fetch fails, but only
    # after trying the two checked addresses, in order, on the HTTPS port.
    assert result.is_error and "Could not connect" in result.text_content()
    assert dialler.dialled == [("93.184.215.14", 443), ("2606:2800:21f:cb07:6820:80da:af6b:8b2c", 443)]


async def test_unparseable_resolver_answers_fail_closed() -> None:
    dialler = RecordingBackend()
    result = await go("https://weird.test/", resolver=resolver_from({"weird.test": ["not-an-ip"]}), inner=dialler)
    assert result.is_error and "not an IP address" in result.text_content()
    assert dialler.dialled == []

"""The web plugin: WebFetch (read a page) and WebSearch (Tavily), safe against SSRF.

Kept light on purpose: this module is imported whenever pegboard starts, so it
uses only the stdlib, pydantic and pegboard. httpx, httpcore and html-to-markdown
are imported by the handler modules, when a tool actually runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard import Tool, Vote, hookimpl

from ._config import WebConfig, api_key

if TYPE_CHECKING:
    from pegboard import RuleSamples
    from pydantic import BaseModel

    from pegboard import Check, PermissionRequest, PluginContext, Rule, RuleMatcher

__all__ = ["WebConfig"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("WebFetch", "WebSearch")

FETCH = "WebFetch"
SEARCH = "WebSearch"
_PKG = "pegboard.plugins.web"


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    from . import _hookspecs

    add(_hookspecs)


@hookimpl
def pegboard_config_model() -> type[BaseModel]:
    return WebConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: Any, context: PluginContext) -> None:
    cfg = config if isinstance(config, WebConfig) else WebConfig()
    register(
        Tool(
            vote=_tool_vote,
            name=FETCH,
            handler=f"{_PKG}._webfetch:web_fetch",
            input_model=f"{_PKG}._models:WebFetchInput",
            read_only=True,
            loading="deferred",
            permission="read",
            # The handler enforces its own deadline; this is a backstop that
            # leaves room for the summariser the host may run afterwards.
            timeout_s=cfg.timeout_s + 120,
        )
    )
    # Without a key the tool would only ever fail: it is registered absent, so that
    # listings and a model that calls it learn what is missing.
    register(
        Tool(
            vote=_tool_vote,
            name=SEARCH,
            handler=f"{_PKG}._websearch:web_search",
            input_model=f"{_PKG}._models:WebSearchInput",
            read_only=True,
            loading="deferred",
            permission="read",
            timeout_s=cfg.search_timeout_s + 10,
            absent=None if api_key(cfg) is not None else _no_key(context.name),
        )
    )


def _no_key(plugin: str) -> str:
    from ._config import ENV_KEY

    return (f"no search API key is set (the operator sets {ENV_KEY} or [plugins.{plugin}] search_api_key); "
            "WebFetch still reads a page whose address is known")


def _tool_vote(request: PermissionRequest) -> Vote | None:
    if request.tool.name == SEARCH:
        return Vote.ask("WebSearch sends the query to the search service")
    if request.tool.name != FETCH:
        return None
    from ._vote import fetch_vote  # one import per call: the vote runs for every WebFetch decision

    return fetch_vote(request)


@hookimpl
def pegboard_doctor(config: Any, context: PluginContext) -> list[Check]:
    import importlib.util

    from pegboard import Check, Rule

    from ._rules import PERSON_LAYERS, explicitly_allowed_hosts

    cfg = config if isinstance(config, WebConfig) else WebConfig()
    checks: list[Check] = []
    # find_spec locates without importing: doctor should stay as light as start-up.
    missing = [m for m in ("httpx", "httpcore", "html_to_markdown") if importlib.util.find_spec(m) is None]
    checks.append(
        Check("libraries", "fail", f"missing {', '.join(missing)}: WebFetch cannot run")
        if missing
        else Check("libraries", "ok", "httpx, httpcore and html-to-markdown are installed")
    )
    if api_key(cfg) is not None:
        checks.append(Check("search", "ok", f"WebSearch is offered (Tavily API at {cfg.search_base_url})"))
    else:
        checks.append(Check("search", "ok", f"WebSearch is absent: {_no_key(context.name)}"))
    rules = []
    for behavior, text, layer in context.settings.rules():
        if layer.name not in PERSON_LAYERS:
            continue  # only the person's own files unlock non-public addresses
        try:
            rules.append(Rule.parse(str(text), behavior, layer.label))  # type: ignore[arg-type]
        except ValueError:
            continue  # the core reports unparseable rules itself
    unlocked = sorted(explicitly_allowed_hosts(rules))
    if unlocked:
        checks.append(
            Check("unlocked hosts", "warn",
                  "WebFetch may reach non-public addresses for: " + ", ".join(unlocked))
        )
    return checks


@hookimpl
def pegboard_rule_matcher(rule: Rule, context: PluginContext, saved: Any) -> RuleMatcher | None:
    if rule.tool == SEARCH:
        if rule.specifier is not None:
            raise ValueError("WebSearch takes no specifier; write WebSearch to allow every search")
        return None
    if rule.tool != FETCH or rule.specifier is None:
        return None
    from ._rules import DomainMatcher, parse_domain_specifier

    if saved is not None:
        return DomainMatcher.restored(rule.specifier, saved)
    return DomainMatcher(parse_domain_specifier(rule.specifier), rule.specifier)


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    """For ``pegboard plugins check web``: exact and wildcard domains."""
    from pegboard import RuleSamples

    urls = ["https://example.com/", "https://a.example.com/x", "https://docs.python.org/3/", "https://evil.net/",
            "https://example.com.evil.net/", "http://127.0.0.1/"]
    return RuleSamples(
        rules=["WebFetch(domain:example.com)", "WebFetch(domain:*.example.com)",
               "WebFetch(domain:docs.python.org)", "WebFetch(domain:127.0.0.1)"],
        calls=[("WebFetch", {"url": url, "prompt": "the title"}) for url in urls],
    )

"""WebSearch against a local server that speaks Tavily's /search JSON."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from test_web_support import Handler, Server, loopback_only, serve  # noqa: F401

from pegboard.plugins.web._models import WebConfig, WebSearchInput
from pegboard.plugins.web._websearch import ENV_KEY, api_key, run_search

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

RESULTS = [
    {"title": "Python  docs", "url": "https://docs.python.org/3/", "content": "The official docs.", "score": 0.9},
    {"title": "PEP 8", "url": "https://peps.python.org/pep-0008/", "content": "Style guide " * 100, "score": 0.8},
    {"title": "Spam", "url": "https://spam.example/python", "content": "buy now", "score": 0.1},
    {"title": "Sneaky", "url": "https://python.org.evil.test/", "content": "lookalike", "score": 0.1},
    {"title": "No URL", "content": "nothing to link"},
]



def tavily(results: list[dict[str, object]] | None = None, status: int = 200) -> Callable[[Handler], None]:
    def route(h: Handler) -> None:
        if status != 200:
            h.send_text(status, json.dumps({"detail": {"error": "nope"}}), "application/json")
            return
        h.send_text(200, json.dumps({"query": json.loads(h.body)["query"], "results": results or [],
                                     "response_time": 0.1}), "application/json")

    return route


def config(srv: Server, **kw: object) -> WebConfig:
    return WebConfig(search_api_key="tvly-test-key", search_base_url=srv.url(""), **kw)  # type: ignore[arg-type]


async def test_results_are_listed_with_titles_urls_and_snippets(serve: Callable[..., Server]) -> None:
    srv = serve({"/search": tavily(RESULTS)})
    result = await run_search(WebSearchInput(query="python style"), config(srv))
    text = result.text_content()
    assert not result.is_error, text
    assert "1. Python docs\n   https://docs.python.org/3/\n   The official docs." in text
    assert "2. PEP 8" in text and "…" in text  # long snippets are clipped
    assert "No URL" not in text and "without a usable URL" in text
    method, path, headers = srv.requests[0]
    assert (method, path) == ("POST", "/search")
    assert headers["authorization"] == "Bearer tvly-test-key"
    assert headers["content-type"] == "application/json"


async def test_request_body_follows_the_tavily_wire_format(serve: Callable[..., Server]) -> None:
    bodies: list[dict[str, object]] = []

    def route(h: Handler) -> None:
        bodies.append(json.loads(h.body))
        tavily(RESULTS)(h)

    srv = serve({"/search": route})
    await run_search(WebSearchInput(query="  python   style ", allowed_domains=["Python.org", "*.python.org"],
                                    blocked_domains=["spam.example"], mode="standard"),
                     config(srv, search_max_results=5))
    await run_search(WebSearchInput(query="python"), config(srv))
    first, second = bodies
    assert first == {
        "query": "python style", "search_depth": "basic", "max_results": 5, "include_answer": False,
        "include_raw_content": False, "include_images": False, "include_domains": ["python.org"],
        "exclude_domains": ["spam.example"], "api_key": "tvly-test-key",
    }
    assert second["search_depth"] == "advanced"  # extended is the default
    assert "include_domains" not in second and "exclude_domains" not in second


async def test_domain_filters_are_enforced_on_the_parsed_host(serve: Callable[..., Server]) -> None:
    # The server ignores the filters; WebSearch applies them itself.
    srv = serve({"/search": tavily(RESULTS)})
    text = (await run_search(WebSearchInput(query="python", allowed_domains=["python.org"]), config(srv))).text_content()
    assert "docs.python.org" in text and "peps.python.org" in text
    assert "spam.example" not in text and "evil.test" not in text
    text = (await run_search(WebSearchInput(query="python", blocked_domains=["docs.python.org"]),
                             config(srv))).text_content()
    assert "docs.python.org" not in text and "peps.python.org" in text


@pytest.mark.parametrize(("status", "words"), [(401, "rejected the API key"), (429, "rate-limiting"),
                                               (500, "HTTP 500")])
async def test_service_errors_are_explained(serve: Callable[..., Server], status: int, words: str) -> None:
    srv = serve({"/search": tavily(status=status)})
    result = await run_search(WebSearchInput(query="python"), config(srv))
    assert result.is_error and words in result.text_content()
    assert "tvly-test-key" not in result.text_content()


async def test_garbage_answers_and_empty_results(serve: Callable[..., Server]) -> None:
    srv = serve({"/search": lambda h: h.send_text(200, "<html>not json</html>", "text/html"),
                 "/empty/search": tavily([])})
    result = await run_search(WebSearchInput(query="python"), config(srv))
    assert result.is_error and "cannot read" in result.text_content()
    cfg = WebConfig(search_api_key="k", search_base_url=srv.url("/empty"))  # type: ignore[arg-type]
    result = await run_search(WebSearchInput(query="python"), cfg)
    assert not result.is_error and "Nothing found" in result.text_content()


async def test_redirects_from_the_service_are_not_followed(serve: Callable[..., Server]) -> None:
    other = serve({"/steal": tavily(RESULTS)})
    srv = serve({"/search": lambda h: h.redirect(other.url("/steal"), 307)})
    result = await run_search(WebSearchInput(query="python"), config(srv))
    assert result.is_error and "HTTP 307" in result.text_content()
    assert other.hits() == 0  # the key never went anywhere else


async def test_bad_domain_filters_are_refused() -> None:
    result = await run_search(WebSearchInput(query="python", allowed_domains=["example.com/path"]),
                              WebConfig(search_api_key="k"))  # type: ignore[arg-type]
    assert result.is_error and "allowed_domains" in result.text_content()


def test_query_needs_two_characters() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        WebSearchInput(query="x")
    with pytest.raises(ValidationError):
        WebSearchInput(query="ok", mode="deep")  # type: ignore[arg-type]


def test_key_comes_from_env_or_config(monkeypatch: pytest.MonkeyPatch) -> None:
    assert api_key(WebConfig()) is None
    assert api_key(WebConfig(search_api_key="  ")) is None  # type: ignore[arg-type]
    assert api_key(WebConfig(search_api_key="from-config")) == "from-config"  # type: ignore[arg-type]
    monkeypatch.setenv(ENV_KEY, "from-env")
    assert api_key(WebConfig(search_api_key="from-config")) == "from-env"  # type: ignore[arg-type]
    assert "from-config" not in repr(WebConfig(search_api_key="from-config"))  # type: ignore[arg-type]

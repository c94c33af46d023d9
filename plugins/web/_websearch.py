"""The WebSearch handler: one POST to a Tavily-compatible ``/search`` endpoint.

The endpoint is the operator's choice (``search_base_url``), so it is not put
through WebFetch's address checks: tests and self-hosted gateways live on
private addresses. Redirects are not followed (the key must not travel to a
host the operator did not name) and proxies from the environment are not
used, as for WebFetch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._addresses import canonical_host
from ._models import ENV_KEY, WebConfig, WebSearchInput, api_key
from ._urls import host_of

if TYPE_CHECKING:
    from pegboard import ToolContext, ToolResult

__all__ = ["ENV_KEY", "api_key", "run_search", "web_search"]

_SNIPPET_CHARS = 600


async def web_search(args: WebSearchInput, ctx: ToolContext) -> ToolResult:
    config = ctx.config if isinstance(ctx.config, WebConfig) else WebConfig()
    return await run_search(args, config)


def _domains(values: list[str] | None, label: str) -> list[str]:
    out: list[str] = []
    for raw in values or []:
        text = raw.strip()
        if text.startswith("*."):
            text = text[2:]
        if "://" in text:
            text = host_of(text) or text
        try:
            host = canonical_host(text)
        except ValueError as exc:
            raise ValueError(f"{label}: {raw!r} is not a domain ({exc})") from None
        if "/" in host or ":" in host:
            raise ValueError(f"{label}: {raw!r} is not a domain")
        out.append(host)
    return list(dict.fromkeys(out))


def _under(host: str, domains: list[str]) -> bool:
    return any(host == d or host.endswith("." + d) for d in domains)


async def run_search(args: WebSearchInput, config: WebConfig) -> ToolResult:
    import httpx
    from pegboard import ToolResult

    from ._transport import ssl_context

    key = api_key(config)
    if key is None:
        return ToolResult.error(
            f"WebSearch has no API key: set {ENV_KEY} or [plugins.web] search_api_key (a Tavily key)."
        )
    try:
        allowed = _domains(args.allowed_domains, "allowed_domains")
        blocked = _domains(args.blocked_domains, "blocked_domains")
    except ValueError as exc:
        return ToolResult.error(f"{exc}. Give bare domains such as example.com.")
    query = " ".join(args.query.split())
    if len(query) < 2:
        return ToolResult.error("The query needs at least 2 characters besides spaces.")

    payload: dict[str, Any] = {
        "query": query,
        "search_depth": "advanced" if args.mode == "extended" else "basic",
        "max_results": config.search_max_results,
        "include_answer": False,
        "include_raw_content": False,
        "include_images": False,
    }
    if allowed:
        payload["include_domains"] = allowed
    if blocked:
        payload["exclude_domains"] = blocked
    # Tavily takes the key as a Bearer token; older deployments and
    # compatible gateways read ``api_key`` from the body, so send both.
    payload["api_key"] = key
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    url = config.search_base_url.rstrip("/") + "/search"
    try:
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(config.search_timeout_s),
            follow_redirects=False,
            trust_env=False,
            verify=ssl_context(True),  # the process-wide context: no CA bundle reload per search
        ) as client:
            response = await client.post(url, json=payload, headers=headers)
    except httpx.TimeoutException:
        return ToolResult.error(f"The search service did not answer within {config.search_timeout_s:g} s; try again.")
    except httpx.HTTPError as exc:
        return ToolResult.error(f"Could not reach the search service: {type(exc).__name__}: {_scrub(str(exc), key)}")

    if response.status_code in (401, 403):
        return ToolResult.error("The search service rejected the API key (HTTP %d); ask the operator to check it." % response.status_code)
    if response.status_code == 429:
        return ToolResult.error("The search service is rate-limiting requests (HTTP 429); wait and try again.")
    if response.status_code != 200:
        detail = _scrub(response.text[:300], key)
        return ToolResult.error(f"The search service answered HTTP {response.status_code}: {detail}")
    try:
        data = response.json()
        results = data.get("results", [])
        if not isinstance(results, list):
            raise TypeError("results is not a list")
    except (ValueError, TypeError, AttributeError) as exc:
        return ToolResult.error(f"The search service sent an answer WebSearch cannot read ({exc}).")

    lines: list[str] = []
    dropped = 0
    for item in results:
        if not isinstance(item, dict):
            continue
        link = str(item.get("url") or "").strip()
        host = host_of(link) if link else None
        if host is None:
            dropped += 1
            continue
        # The service is asked to filter, but the promise to the model is ours:
        # check again on the parsed host.
        if (allowed and not _under(host, allowed)) or _under(host, blocked):
            dropped += 1
            continue
        title = " ".join(str(item.get("title") or "(no title)").split())
        snippet = " ".join(str(item.get("content") or "").split())
        if len(snippet) > _SNIPPET_CHARS:
            snippet = snippet[: _SNIPPET_CHARS - 1] + "…"
        n = len(lines) + 1
        lines.append(f"{n}. {title}\n   {link}" + (f"\n   {snippet}" if snippet else ""))

    depth = payload["search_depth"]
    head = f'Web search for "{query}" ({args.mode}, search depth {depth}): {len(lines)} result(s).'
    if dropped:
        head += f" {dropped} result(s) outside the domain filters or without a usable URL were left out."
    if not lines:
        return ToolResult.text(head + "\nNothing found; try other words or fewer domain filters.")
    tail = "Snippets come from the pages and are untrusted; use WebFetch on a URL to read more."
    return ToolResult.text("\n\n".join([head, *lines, tail]))


def _scrub(text: str, key: str) -> str:
    return text.replace(key, "[key]") if key else text

"""The approvals page on a team's server, in a real browser (Debian's
Chromium driven by Playwright, never ``playwright install``): two replicas
on the real PostgreSQL store; a client's call waits on one, an approver
signs in on the other's page, sees it come in, approves or denies it, and
the call completes (or the model is told the message) on the first."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _served import Serve, add_key, mcp_client, pegboard, pg_store, replicas  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
WAIT_MS = 60_000


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright (Python) is not installed: it is in the dev dependency group")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's package chromium; .ci/run installs it)")
    yield async_playwright


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def signed_in_page(playwright: Any, served: Serve, key: str) -> tuple[Any, Any]:
    from playwright.async_api import expect

    browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    page = await browser.new_page()
    await page.goto(served.base + "/approvals/")
    await expect(page).to_have_url(served.base + "/approvals/signin")
    await page.get_by_label("API key or access token").fill(key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#approver")).to_have_text("reviewer")
    return browser, page


@pytest.mark.anyio
async def test_a_call_waiting_on_one_replica_is_approved_on_the_other_ones_page(
        browser: Any, replicas: tuple[Serve, Serve], project: Path) -> None:
    from playwright.async_api import expect

    first, second = replicas
    bob = add_key(project, "bob")
    reviewer = add_key(project, "reviewer", "--approver")
    target = project / "approved.txt"
    results: list[Any] = []

    async def call() -> None:
        async with mcp_client(first.url, bob) as client:  # the call waits on the first replica
            results.append(await client.call_tool("Write", {"file_path": str(target), "content": "yes"}))

    async with browser() as playwright:
        chromium, page = await signed_in_page(playwright, second, reviewer)  # the page of the second
        try:
            await expect(page.locator("#calls")).to_contain_text("No call waits")
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                # not reloaded: the page hears from the store that a call waits (on the other replica)
                card = page.locator("#calls article.call")
                await expect(card).to_be_visible(timeout=WAIT_MS)
                await expect(card).to_contain_text("Write")
                await expect(card).to_contain_text("bob")  # the requester
                assert await card.get_by_role("button", name="Approve always").count() == 0
                await card.get_by_role("button", name="Approve once").click()
                await expect(page.locator("#notice")).to_contain_text("Approved")
            (result,) = results
            assert not result.is_error, text(result)
            assert target.read_text() == "yes"
            await expect(page.locator("#calls")).to_contain_text("No call waits", timeout=WAIT_MS)
            # the audit row: Write, allowed, for bob, approved by reviewer
            decisions = page.locator("#decisions")
            await expect(decisions).to_contain_text("client bob", timeout=WAIT_MS)
            await expect(decisions).to_contain_text("by reviewer", timeout=WAIT_MS)
            # filters by client
            await page.goto(second.base + "/approvals/?client=someone-else")
            await expect(page.locator("#decisions")).not_to_contain_text("client bob")
            await page.goto(second.base + "/approvals/?client=bob")
            await expect(page.locator("#decisions")).to_contain_text("client bob")
        finally:
            await chromium.close()
    listed = json.loads(pegboard(project, "approvals", "list", "--json").stdout)
    assert listed == []
    answered = [e for e in first.drain() if e["event"] == "approval.settled"]
    assert answered and answered[0]["by"] == "reviewer" and answered[0]["client"] == "bob"


@pytest.mark.anyio
async def test_a_denial_with_a_message_reaches_the_model(browser: Any, replicas: tuple[Serve, Serve],
                                                         project: Path) -> None:
    from playwright.async_api import expect

    first, second = replicas
    carol = add_key(project, "carol")
    reviewer = add_key(project, "reviewer", "--approver")
    results: list[Any] = []

    async def call() -> None:
        async with mcp_client(first.url, carol) as client:
            results.append(await client.call_tool("Write", {"file_path": str(project / "no.txt"), "content": "x"}))

    async with browser() as playwright:
        chromium, page = await signed_in_page(playwright, second, reviewer)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                card = page.locator("#calls article.call")
                await expect(card).to_be_visible(timeout=WAIT_MS)
                await card.get_by_label("Message to the model").fill("Write it under docs/ instead.")
                await card.get_by_role("button", name="Deny").click()
                await expect(page.locator("#notice")).to_contain_text("Denied")
        finally:
            await chromium.close()
    (result,) = results
    assert result.is_error and "Write it under docs/ instead." in text(result)
    assert not (project / "no.txt").exists()


def test_only_an_approver_signs_in_and_a_revoked_key_is_signed_out(replicas: tuple[Serve, Serve],
                                                                   project: Path) -> None:
    _, served = replicas
    page = served.base + "/approvals/"
    assert httpx.get(page, timeout=30).status_code == 303  # to the sign-in form
    assert httpx.get(page + "events", timeout=30).status_code == 403
    plain = add_key(project, "dora")
    refused = httpx.post(page + "signin", data={"credential": plain}, timeout=30)
    assert refused.status_code == 403 and "set-cookie" not in refused.headers
    assert httpx.post(page + "signin", data={"credential": "pbk_0000000000000000_" + "x" * 43},
                      timeout=30).status_code == 403
    approver = add_key(project, "eve", "--approver")
    signed = httpx.post(page + "signin", data={"credential": approver}, timeout=30)
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/approvals/" in cookie
    jar = {"pegboard_approver": cookie.split(";")[0].split("=", 1)[1]}
    assert httpx.get(page, cookies=jar, timeout=30).status_code == 200
    forged = dict(jar, pegboard_approver=jar["pegboard_approver"][:-2] + "00")
    assert httpx.get(page, cookies=forged, timeout=30).status_code == 303
    assert pegboard(project, "serve", "keys", "revoke", "eve").returncode == 0
    time.sleep(1.2)  # a key is looked up again at most every second
    assert httpx.get(page, cookies=jar, timeout=30).status_code == 303

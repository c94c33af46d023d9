"""The approvals page as an ASGI application, spoken to over HTTP in this
process (httpx's ASGI transport): who is let in, what its forms may do, what
it shows. The real server and a real browser: tests/core/cli/test_approvals_browser.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from _approval_host import LaterHost

from pegboard import Answer, Toolbox
from pegboard._cli.approvals_page import ApprovalsPage, Approver, PageRequest, TokenGate, loopback_hosts

pytestmark = pytest.mark.anyio

TOKEN = "t0ken-" + "x" * 30
ORIGIN = "http://127.0.0.1:8123"


async def _waiting(root: Path, content: str = "hi\n", session_id: str = "conv-1",
                   requester: str | None = None) -> tuple[Toolbox, Any, str]:
    toolbox = Toolbox.load(cwd=root, plugins=["fs"], host=LaterHost())
    session = toolbox.session("default", session_id=session_id)
    session.requester = requester
    await session.call("Write", {"file_path": str(root / "out.txt"), "content": content}, call_id="w1")
    [call] = session.pending.list()
    return toolbox, session, call.id


def _client(toolbox: Toolbox, identify: Any = None) -> httpx.AsyncClient:
    app = ApprovalsPage(toolbox, identify or TokenGate(TOKEN, "alice"), hosts=loopback_hosts(8123))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN)


def _form(page: str, pending_id: str) -> dict[str, str]:
    """The hidden fields of the call's form, as the page rendered them."""
    card = page[page.index(f'id="call-{pending_id}"'):]
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', card)[:3])


async def test_every_request_without_the_token_is_refused(tmp_path: Path) -> None:
    toolbox, _, pending_id = await _waiting(tmp_path)
    async with _client(toolbox) as client:
        for method, path in (("GET", "/"), ("GET", "/events"), ("POST", "/answer"), ("GET", "/favicon.ico"),
                             ("GET", f"/?token={TOKEN[:-1]}"), ("GET", f"/?token={TOKEN}x")):
            response = await client.request(method, path)
            assert response.status_code == 403, (method, path)
            assert "needs the token" in response.text and pending_id not in response.text
        # The right token, another name for the host (DNS rebinding): refused too.
        response = await client.get(f"/?token={TOKEN}", headers={"host": "attacker.example:8123"})
        assert response.status_code == 403 and "Host header" in response.text
        assert toolbox.pending_calls()[0].status == "pending"
        shown = await client.get(f"/?token={TOKEN}")
        assert shown.status_code == 200 and pending_id in shown.text


async def test_the_page_shows_the_call_redacted_with_where_it_came_from(tmp_path: Path) -> None:
    toolbox, _, pending_id = await _waiting(tmp_path, content="password=hunter2 and the rest",
                                            requester="build-bot")
    async with _client(toolbox) as client:
        page = (await client.get(f"/?token={TOKEN}")).text
    card = page[page.index(f'id="call-{pending_id}"'):page.index("</article>")]
    assert "hunter2" not in page and "password=***" in card
    for shown in ("Write", "conv-1", str(tmp_path), "build-bot", "w1", "Approve once", "Approve always", "Deny"):
        assert shown in card, shown
    headers = (await _client(toolbox).get(f"/?token={TOKEN}")).headers
    assert "script-src 'nonce-" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "same-origin" and headers["x-frame-options"] == "DENY"


async def test_a_form_without_its_csrf_token_or_from_another_site_is_refused(tmp_path: Path) -> None:
    toolbox, _, pending_id = await _waiting(tmp_path)
    async with _client(toolbox) as client:
        fields = _form((await client.get(f"/?token={TOKEN}")).text, pending_id)
        assert set(fields) == {"csrf", "id", "digest"}
        url = f"/answer?token={TOKEN}"
        refused = [
            await client.post(url, data={**fields, "csrf": "", "action": "approve"}),
            await client.post(url, data={k: v for k, v in fields.items() if k != "csrf"} | {"action": "approve"}),
            await client.post(url, data={**fields, "action": "approve"}, headers={"origin": "http://evil.example"}),
            await client.post(url, data={**fields, "action": "approve"}, headers={"sec-fetch-site": "cross-site"}),
        ]
        assert [r.status_code for r in refused] == [403] * 4
        assert all("CSRF" in r.text for r in refused)
        # Another approver's token is not this one's.
        other = ApprovalsPage(toolbox, TokenGate(TOKEN, "mallory"), hosts=loopback_hosts(8123))
        assert fields["csrf"] != other.csrf_token(Approver("mallory"))
        assert toolbox.pending_calls()[0].status == "pending"
        # The same form from the page itself answers.
        answered = await client.post(url, data={**fields, "action": "approve"}, headers={"origin": ORIGIN,
                                                                                         "sec-fetch-site": "same-origin"})
        assert answered.status_code == 303 and "notice=approved" in answered.headers["location"]
        assert f"token={TOKEN}" in answered.headers["location"]
    assert toolbox.pending_calls()[0].status == "approved"


async def test_approve_once_runs_through_the_session_with_the_approver_kept(tmp_path: Path) -> None:
    toolbox, session, pending_id = await _waiting(tmp_path)
    async with _client(toolbox) as client:
        fields = _form((await client.get(f"/?token={TOKEN}")).text, pending_id)
        await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "approve"})
        [call] = toolbox.pending_calls()
        assert call.answer is not None and call.answer.approver == "alice" and call.answer.remember is None
        assert call.digest == fields["digest"]
        # Each call is answered once: the same form again changes nothing.
        again = await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "deny"})
        assert "notice=answered" in again.headers["location"]
        notice = (await client.get(again.headers["location"].lstrip("."))).text
        assert "answered already" in notice
        result = await session.pending.resolve(pending_id)
        assert not result.is_error and (tmp_path / "out.txt").read_text() == "hi\n"
        answered = (await client.get(f"/?token={TOKEN}")).text
    section = answered[answered.index('id="answered"'):]
    assert "approved once by alice" in section and "ran" in section
    assert "No call waits" in answered


async def test_deny_with_a_message_reaches_the_model(tmp_path: Path) -> None:
    toolbox, session, pending_id = await _waiting(tmp_path)
    async with _client(toolbox) as client:
        fields = _form((await client.get(f"/?token={TOKEN}")).text, pending_id)
        await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "deny",
                                                         "message": "Write to docs/ instead."})
    result = await session.pending.resolve(pending_id)
    assert result.is_error and "Write to docs/ instead." in result.text_content()
    assert not (tmp_path / "out.txt").exists()


async def test_approve_always_keeps_the_suggested_rule_as_the_cli_does(tmp_path: Path) -> None:
    toolbox, session, pending_id = await _waiting(tmp_path)
    [call] = toolbox.pending_calls()
    async with _client(toolbox) as client:
        fields = _form((await client.get(f"/?token={TOKEN}")).text, pending_id)
        bad = await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "always", "rule": "9",
                                                               "scope": "session"})
        assert bad.status_code == 400
        await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "always", "rule": "0",
                                                         "scope": "session"})
    [answered] = toolbox.pending_calls()
    assert answered.answer == Answer(allow=True, remember="session", rule=call.suggestions[0], approver="alice")
    assert not (await session.pending.resolve(pending_id)).is_error
    later = await session.decide("Write", {"file_path": str(tmp_path / "second.txt"), "content": ""})
    assert later.decision == "allow"


async def test_a_call_changed_since_the_page_showed_it_is_not_answered(tmp_path: Path) -> None:
    import json

    from pegboard._services.tables import pending

    toolbox, _, pending_id = await _waiting(tmp_path)
    async with _client(toolbox) as client:
        fields = _form((await client.get(f"/?token={TOKEN}")).text, pending_id)
        with toolbox.plugins.stores("pegboard").begin() as conn:
            conn.execute(pending.update().where(pending.c.id == pending_id).values(
                input=json.dumps({"file_path": str(tmp_path / "elsewhere.txt"), "content": "x"})))
        changed = await client.post(f"/answer?token={TOKEN}", data={**fields, "action": "approve"})
    assert "notice=changed" in changed.headers["location"]
    assert toolbox.pending_calls()[0].status == "pending"


async def test_an_approver_sees_and_answers_only_their_clients_calls(tmp_path: Path) -> None:
    toolbox, _, mine = await _waiting(tmp_path, session_id="a", requester="team-a")
    other = toolbox.session("default", session_id="b")
    other.requester = "team-b"
    await other.call("Write", {"file_path": str(tmp_path / "b.txt"), "content": "b"})
    [theirs] = other.pending.list()
    gate_a = Approver("ann", clients=frozenset({"team-a"}))
    async with _client(toolbox, identify=lambda request: gate_a) as client:
        page = (await client.get("/")).text
        assert mine in page and theirs.id not in page
        filtered = (await client.get("/", params={"client": "team-b"})).text
        assert mine not in filtered and "No call waits" in filtered
        csrf = _form(page, mine)["csrf"]
        forged = await client.post("/answer", data={"csrf": csrf, "id": theirs.id, "digest": theirs.current_digest(),
                                                    "action": "approve"})
        assert "notice=gone" in forged.headers["location"]
    assert {c.id: c.status for c in toolbox.pending_calls()} == {mine: "pending", theirs.id: "pending"}


def test_the_token_gate_compares_the_query_token() -> None:
    gate = TokenGate(TOKEN, "alice")

    def request(query: bytes) -> PageRequest:
        return PageRequest({"method": "GET", "path": "/", "query_string": query, "headers": []})

    assert gate(request(f"token={TOKEN}".encode())) == Approver("alice", carry=f"token={TOKEN}")
    assert gate(request(b"")) is None and gate(request(b"token=\xff")) is None


async def test_recent_decisions_come_from_the_audit_log_with_filters(tmp_path: Path) -> None:
    from pegboard._services.audit import flush_all
    from pegboard.paths import config_dir

    config = config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[audit]\nenabled = true\n")
    (tmp_path / "notes.txt").write_text("notes\n")
    toolbox, session, pending_id = await _waiting(tmp_path, content="secret_token=abc123abc123 end")
    other = toolbox.session("default", session_id="conv-2")
    assert not (await other.call("Read", {"file_path": str(tmp_path / "notes.txt")})).is_error
    flush_all()
    async with _client(toolbox) as client:
        async def decisions(**filters: str) -> str:
            page = (await client.get("/", params={"token": TOKEN, **filters})).text
            return page[page.index('id="decisions"'):]

        every = await decisions()
        assert "Read" in every and "Write" in every and "abc123abc123" not in every
        assert "Read" not in await decisions(tool="Write")
        asked = await decisions(decision="ask")
        assert "Write" in asked and "Read" not in asked
        assert "Write" not in await decisions(session="conv-2")
        assert "No decisions recorded" in await decisions(tool="Nope")

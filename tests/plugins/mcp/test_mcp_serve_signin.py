"""``pegboard serve --http`` for a team: clients sign in with API keys the
operator issued or with access tokens of an organisation's authorization
server (a local test issuer publishing its JWKS on 127.0.0.1), and each
client's rules apply to its own calls. Every test runs real serve
processes and the MCP SDK's client."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _served import Serve, add_key, mcp_client, pegboard, start_serve, stop_serve

pytestmark = pytest.mark.slow

AUDIENCE = "https://pegboard.test/mcp"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\n")
    return root


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def read_notes(url: str, credential: str | None, project: Path) -> Any:
    async with mcp_client(url, credential) as client:
        return await client.call_tool("Read", {"file_path": str(project / "notes.txt")})


# --- API keys ---------------------------------------------------------------------------


@pytest.fixture
def keyed(project: Path, user_config: Callable[[str], Path]) -> Iterator[Serve]:
    user_config("[plugins.mcp.serve]\napi_keys = true\n")
    served = start_serve(project)
    try:
        yield served
    finally:
        stop_serve(served)


@pytest.mark.anyio
async def test_a_key_signs_in_no_key_or_a_revoked_one_is_refused(keyed: Serve, project: Path) -> None:
    alice = add_key(project, "alice", "--expires", "30d")
    assert alice.startswith("pbk_")
    result = await read_notes(keyed.url, alice, project)
    assert not result.is_error and "second line" in text(result)

    no_key = httpx.post(keyed.url, json={}, headers={"accept": "application/json, text/event-stream"}, timeout=30)
    assert no_key.status_code == 401 and 'error="invalid_token"' not in no_key.headers["www-authenticate"]
    forged = alice[:-4] + ("AAAA" if not alice.endswith("AAAA") else "BBBB")
    wrong = httpx.post(keyed.url, json={}, headers={"authorization": f"Bearer {forged}"}, timeout=30)
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]

    revoked = pegboard(project, "serve", "keys", "revoke", "alice")
    assert revoked.returncode == 0 and "revoked" in revoked.stdout, revoked.stderr
    after = httpx.post(keyed.url, json={}, headers={"authorization": f"Bearer {alice}"}, timeout=30)
    assert after.status_code == 401  # the next request, no restart
    listed = json.loads(pegboard(project, "serve", "keys", "list", "--json").stdout)
    assert [(k["name"], k["state"]) for k in listed] == [("alice", "revoked")]

    # the audit and the log name who called, never the key
    events = keyed.drain()
    refusals = [e for e in events if e["event"] == "sign_in_refused"]
    assert any("revoked API key" in e["why"] for e in refusals), refusals
    assert not any(alice in json.dumps(e) for e in events)
    assert any(e["event"] == "request" and e.get("client") == "alice" and e.get("via") == "api key" for e in events)


@pytest.mark.anyio
async def test_an_expired_key_is_refused(keyed: Serve, project: Path) -> None:
    from sqlalchemy import update

    from pegboard import Toolbox
    from pegboard.plugins.mcp._serve_tables import keys

    bob = add_key(project, "bob")
    assert not (await read_notes(keyed.url, bob, project)).is_error
    store = Toolbox.load(cwd=project).context_for("mcp").store  # type: ignore[union-attr]
    with store.begin() as conn:
        conn.execute(update(keys).values(expires_at=time.time() - 1))
    assert httpx.post(keyed.url, json={}, headers={"authorization": f"Bearer {bob}"}, timeout=30).status_code == 401


def test_keys_add_checks_its_arguments(project: Path) -> None:
    assert pegboard(project, "serve", "keys", "add", "bad name").returncode == 2
    assert "in the past" in pegboard(project, "serve", "keys", "add", "x", "--expires", "2001-01-01").stderr
    missing = pegboard(project, "serve", "keys", "revoke", "nobody")
    assert missing.returncode == 1 and "no active key" in missing.stderr


@pytest.mark.anyio
async def test_per_client_rules_differ_in_one_server(project: Path, user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.mcp.serve]\napi_keys = true\n'
                '[clients.alice]\ndeny = ["Read"]\n'
                '[clients.bob]\nallow = ["Write"]\n')
    alice, bob = add_key(project, "alice"), add_key(project, "bob")
    served = start_serve(project)
    try:
        denied = await read_notes(served.url, alice, project)
        assert denied.is_error and "denied by Read" in text(denied), text(denied)
        assert not (await read_notes(served.url, bob, project)).is_error
        for who, key in (("alice", alice), ("bob", bob)):
            async with mcp_client(served.url, key) as client:
                wrote = await client.call_tool("Write", {"file_path": str(project / f"{who}.txt"), "content": who})
            assert wrote.is_error == (who == "alice"), text(wrote)  # bob's rule; alice's call would ask
        assert (project / "bob.txt").read_text() == "bob" and not (project / "alice.txt").exists()
    finally:
        stop_serve(served)
    calls = [e for e in served.drain() if e["event"] == "call"]
    assert {(e["client"], e["tool"], e["is_error"]) for e in calls} == {
        ("alice", "Read", True), ("bob", "Read", False), ("alice", "Write", True), ("bob", "Write", False)}


@pytest.mark.anyio
async def test_a_keys_level_is_a_ceiling(keyed: Serve, project: Path) -> None:
    wide = add_key(project, "reader")  # the same name, no ceiling: its session is not the narrow key's
    async with mcp_client(keyed.url, wide) as client:
        assert "Write" in {t.name for t in (await client.list_tools()).tools}
    reader = add_key(project, "reader", "--level", "read")
    async with mcp_client(keyed.url, reader) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "Read" in names and "Write" not in names
        refused = await client.call_tool("Write", {"file_path": str(project / "x.txt"), "content": "x"})
    assert refused.is_error and "not offered" in text(refused) and not (project / "x.txt").exists()


# --- OAuth: a local issuer --------------------------------------------------------------


class Issuer:
    """An authorization server's part a resource server sees: its JWKS on
    127.0.0.1, and tokens it signs with its RSA key."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwks = json.dumps({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()
        self.fetches = 0
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                issuer.fetches += 1
                self.send_response(200 if self.path == "/jwks.json" else 404)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(jwks if self.path == "/jwks.json" else b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, sub: str, scope: str, *, audience: str = AUDIENCE, issuer: str | None = None,
              lifetime_s: int = 300) -> str:
        import jwt

        now = int(time.time())
        return jwt.encode({"iss": issuer or self.url, "sub": sub, "aud": audience, "scope": scope, "iat": now,
                           "exp": now + lifetime_s}, self.key, algorithm="RS256", headers={"kid": "k1"})

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    found = Issuer()
    yield found
    found.close()


@pytest.fixture
def oauth_served(project: Path, issuer: Issuer, user_config: Callable[[str], Path]) -> Iterator[Serve]:
    user_config(f'[plugins.mcp.serve]\nurl = "{AUDIENCE}"\n'
                f'[plugins.mcp.serve.oauth]\nissuer = "{issuer.url}"\njwks_url = "{issuer.url}/jwks.json"\n'
                'scopes = { "pegboard:read" = "read", "pegboard:write" = "workspace" }\n'
                'approver_scope = "pegboard:approve"\n')
    served = start_serve(project)
    try:
        yield served
    finally:
        stop_serve(served)


def test_clients_discover_the_authorization_server(oauth_served: Serve, issuer: Issuer) -> None:
    challenge = httpx.post(oauth_served.url, json={}, timeout=30)
    assert challenge.status_code == 401
    assert ('resource_metadata="https://pegboard.test/.well-known/oauth-protected-resource/mcp"'
            in challenge.headers["www-authenticate"])
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        metadata = httpx.get(oauth_served.base + path, timeout=30)
        assert metadata.status_code == 200, path
        found = metadata.json()
        assert found["resource"] == AUDIENCE and found["authorization_servers"] == [issuer.url]
        assert set(found["scopes_supported"]) == {"pegboard:read", "pegboard:write"}


@pytest.mark.anyio
async def test_an_access_token_for_another_audience_is_refused_the_right_one_signs_in(
        oauth_served: Serve, issuer: Issuer, project: Path) -> None:
    elsewhere = issuer.token("carol@example.com", "pegboard:read", audience="https://other.example/mcp")
    refused = httpx.post(oauth_served.url, json={}, headers={"authorization": f"Bearer {elsewhere}"}, timeout=30)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
    foreign = issuer.token("carol@example.com", "pegboard:read", issuer="https://evil.example")
    assert httpx.post(oauth_served.url, json={}, headers={"authorization": f"Bearer {foreign}"},
                      timeout=30).status_code == 401
    expired = issuer.token("carol@example.com", "pegboard:read", lifetime_s=-120)
    assert httpx.post(oauth_served.url, json={}, headers={"authorization": f"Bearer {expired}"},
                      timeout=30).status_code == 401

    right = issuer.token("carol@example.com", "pegboard:read")
    result = await read_notes(oauth_served.url, right, project)
    assert not result.is_error and "first line" in text(result)
    why = [e["why"] for e in oauth_served.drain() if e["event"] == "sign_in_refused"]
    assert any("audience" in w for w in why) and any("issuer" in w.lower() for w in why), why
    assert issuer.fetches == 1  # the keys were fetched once and kept


@pytest.mark.anyio
async def test_a_scope_mapped_to_a_level_is_enforced(oauth_served: Serve, issuer: Issuer, project: Path) -> None:
    reader = issuer.token("dave", "openid pegboard:read")
    async with mcp_client(oauth_served.url, reader) as client:
        assert "Write" not in {t.name for t in (await client.list_tools()).tools}
        refused = await client.call_tool("Write", {"file_path": str(project / "d.txt"), "content": "x"})
    assert refused.is_error and "not offered in read" in text(refused), text(refused)

    writer = issuer.token("erin", "pegboard:write")
    async with mcp_client(oauth_served.url, writer) as client:
        wrote = await client.call_tool("Write", {"file_path": str(project / "e.txt"), "content": "erin"})
    assert not wrote.is_error and (project / "e.txt").read_text() == "erin"

    unmapped = issuer.token("frank", "openid profile")
    response = httpx.post(oauth_served.url, json={}, headers={"authorization": f"Bearer {unmapped}"}, timeout=30)
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
    assert 'scope="pegboard:read pegboard:write"' in response.headers["www-authenticate"]


def test_the_load_balancers_checks_need_no_credential(oauth_served: Serve) -> None:
    health = httpx.get(oauth_served.base + "/healthz", timeout=30)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    ready = httpx.get(oauth_served.base + "/readyz", timeout=30)
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert httpx.get(oauth_served.base + "/anything", timeout=30).status_code == 401

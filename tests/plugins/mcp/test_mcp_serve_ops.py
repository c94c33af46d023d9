"""What a load balancer and an operator get from ``pegboard serve --http``,
in process: readiness says why it is not ready, the JSON log is one object
per line and never holds a credential, API keys are checked by hash."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox


class FailingStore:
    async def run(self, fn: Any, *args: Any, read_only: bool = False) -> Any:
        raise ConnectionRefusedError("connection refused")

    def describe_error(self, exc: BaseException) -> str:
        return f"postgresql+psycopg://pegboard:***@db/pegboard: {type(exc).__name__}: {exc}"


class DeadTeam:
    alive = False
    problem = "the store did not answer the last heartbeat"


@pytest.mark.slow
@pytest.mark.anyio
async def test_readiness_says_why_it_is_not_ready(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import httpx

    from pegboard.plugins.mcp._config import ServeConfig
    from pegboard.plugins.mcp._serve import SessionRegistry, build_server
    from pegboard.plugins.mcp._serve_app import Readiness, build_app
    from pegboard.plugins.mcp._serve_credentials import Credentials
    from pegboard.plugins.mcp._serve_http import HttpPlan, TokenSource
    from pegboard.plugins.mcp._serve_log import ServeLog

    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    server = build_server(toolbox, SessionRegistry(toolbox, None, single_connection=False))
    plan = HttpPlan(host="127.0.0.1", port=8765, allow_remote=False, tls=None, no_auth=False, tokens=TokenSource())
    app = build_app(server, plan=plan, port=8765, credentials=Credentials(token="t" * 32, owner="me"),
                    log=ServeLog(), serve=ServeConfig(), readiness=Readiness([FailingStore()], DeadTeam()),
                    replica="r1", stateless=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "unready"
        problems = ready.json()["problems"]
        assert any("connection refused" in p and "***" in p for p in problems), problems
        assert any("heartbeat" in p for p in problems), problems
        live = await http.get("/healthz")
        assert live.status_code == 200 and live.json() == {"status": "ok", "replica": "r1"}
        assert (await http.get("/mcp")).status_code == 401


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_issuer_that_does_not_answer_is_503_not_a_wrong_token(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import socket

    import httpx

    from pegboard.plugins.mcp._config import ServeConfig
    from pegboard.plugins.mcp._serve import SessionRegistry, build_server
    from pegboard.plugins.mcp._serve_app import Readiness, build_app
    from pegboard.plugins.mcp._serve_credentials import Credentials
    from pegboard.plugins.mcp._serve_http import HttpPlan, TokenSource
    from pegboard.plugins.mcp._serve_log import ServeLog
    from pegboard.plugins.mcp._serve_oauth import OAuthVerifier

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    nowhere = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening: refused
    serve = ServeConfig.model_validate({"url": "https://pegboard.test/mcp", "oauth": {
        "issuer": nowhere, "jwks_url": nowhere + "/jwks.json"}})
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    server = build_server(toolbox, SessionRegistry(toolbox, None, single_connection=False))
    plan = HttpPlan(host="127.0.0.1", port=8765, allow_remote=False, tls=None, no_auth=False, tokens=TokenSource())
    out = io.StringIO()
    credentials = Credentials(token="t" * 32, owner="me", oauth=OAuthVerifier(serve.oauth, audience=serve.url))
    app = build_app(server, plan=plan, port=8765, credentials=credentials, log=ServeLog(True, out), serve=serve,
                    readiness=Readiness([]), replica=None, stateless=False)
    token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2ln"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as http:
        down = await http.post("/mcp", json={}, headers={"authorization": f"Bearer {token}"})
        assert down.status_code == 503 and down.headers["retry-after"] == "5"
        assert (await http.post("/mcp", json={}, headers={"authorization": "Bearer nonsense"})).status_code == 401
    closed.close()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert any(e["event"] == "sign_in_unavailable" and "could not be fetched" in e["why"] for e in events)


def test_the_json_log_is_one_object_a_line() -> None:
    from pegboard.plugins.mcp._serve_log import ServeLog

    out = io.StringIO()
    log = ServeLog(json_lines=True, stream=out, replica="r1")
    log.event("request", method="POST", path="/mcp", status=200, ms=1.5, client="alice", via=None)
    log.say("serving MCP at http://127.0.0.1:1/mcp", event="listening", url="http://127.0.0.1:1/mcp")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["request", "listening"]
    assert lines[0]["replica"] == "r1" and "via" not in lines[0] and lines[0]["level"] == "info"
    assert abs(lines[1]["ts"] - time.time()) < 60
    text = io.StringIO()
    quiet = ServeLog(stream=text)
    quiet.event("request", status=200)  # a person's terminal gets no line per request
    quiet.event("replica.store_failed", level="error", why="down")
    assert text.getvalue() == "pegboard: replica.store_failed: why=down\n"


@pytest.mark.slow
def test_a_key_is_kept_as_a_hash_and_found_by_its_id(tmp_path: Path) -> None:
    from sqlalchemy import select

    from pegboard.plugins.mcp._serve_keys import find_key, make_key, parse_expiry, revoke_keys
    from pegboard.plugins.mcp._serve_tables import keys

    store = Toolbox.load(cwd=tmp_path, plugins=["mcp"]).context_for("mcp").store  # type: ignore[union-attr]
    key, row = make_key(store, "alice@example.com", level="read", approver=False, expires_at=parse_expiry("1h"))
    with store.begin(read_only=True) as conn:
        stored = conn.execute(select(keys)).one()
        assert key.split("_")[2] not in json.dumps([str(v) for v in stored])  # never the secret
        assert find_key(conn, key, time.time())[0] == row
        assert find_key(conn, key[:-1] + ("A" if key[-1] != "A" else "B"), time.time()) == (None, "unknown API key")
        assert find_key(conn, "pbk_nothex_x", time.time()) == (None, "not an API key")
        assert find_key(conn, key, time.time() + 7200)[1].startswith("expired API key")
    assert [k.id for k in revoke_keys(store, "alice@example.com")] == [row.id]
    with store.begin(read_only=True) as conn:
        assert find_key(conn, key, time.time())[1].startswith("revoked API key")
    for wrong in ("yesterday", "0d", "2001-01-01"):
        with pytest.raises(ValueError):
            parse_expiry(wrong)


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_opaque_token_is_asked_about_at_the_issuers_introspection_endpoint() -> None:
    import http.server
    import threading
    from urllib.parse import parse_qs

    from pegboard.plugins.mcp._config import ServeOAuthConfig
    from pegboard.plugins.mcp._serve_credentials import Credentials, Refused, SignedIn
    from pegboard.plugins.mcp._serve_oauth import OAuthVerifier

    audience, asked = "https://pegboard.test/mcp", []
    answers = {
        "good": {"active": True, "aud": [audience], "sub": "gina", "scope": "pegboard:read", "exp": time.time() + 60},
        "elsewhere": {"active": True, "aud": "https://other.example", "sub": "hal", "scope": "pegboard:read"},
        "revoked": {"active": False},
    }

    class Issuer(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            form = parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
            asked.append((form["token"][0], self.headers["authorization"]))
            body = json.dumps(answers.get(form["token"][0], {"active": False})).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        config = ServeOAuthConfig(issuer=url, introspection_url=url + "/introspect", introspection_client_id="pb",
                                  introspection_client_secret="s3cret", scopes={"pegboard:read": "read"})
        credentials = Credentials(token=None, owner="me", oauth=OAuthVerifier(config, audience=audience))
        good = await credentials.check([b"Bearer good"])
        assert isinstance(good, SignedIn) and good.client.id == "gina" and good.client.level == "read"
        assert isinstance(await credentials.check([b"Bearer good"]), SignedIn)
        assert [t for t, _ in asked] == ["good"]  # a yes is kept a few seconds
        assert asked[0][1].startswith("Basic ")  # pegboard's own client credentials
        for token, why in (("elsewhere", "audience"), ("revoked", "not active")):
            refused = await credentials.check([f"Bearer {token}".encode()])
            assert isinstance(refused, Refused) and refused.status == 401 and why in refused.why
    finally:
        server.shutdown()

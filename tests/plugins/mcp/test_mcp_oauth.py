"""Signing in to OAuth-protected MCP servers, against a real authorization
server and resource server on 127.0.0.1 (tests/mcp_servers/oauth_server.py):
each flow, where tokens live, refresh, step-up, login and logout."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_servers.helpers import HERE, free_port, wait_for_port
from pegboard import Answer, Toolbox, hookimpl

pytestmark = pytest.mark.anyio

SERVER = HERE / "oauth_server.py"
PEGBOARD = Path(sys.executable).parent / "pegboard"


class Protected:
    def __init__(self, options: dict[str, Any]) -> None:
        port = free_port()
        self.proc = subprocess.Popen([sys.executable, str(SERVER), str(port)],
                                     env={**os.environ, "OAUTH_OPTIONS": json.dumps(options)},
                                     stderr=subprocess.DEVNULL)
        wait_for_port(port, self.proc)
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"

    def log(self, event: str | None = None) -> list[dict[str, Any]]:
        entries = httpx.get(f"{self.base}/log").json()
        return [e for e in entries if event is None or e["event"] == event]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def serve_oauth() -> Iterator[Any]:
    started: list[Protected] = []

    def start(**options: Any) -> Protected:
        started.append(Protected(options))
        return started[-1]

    yield start
    for server in started:
        server.stop()


class Yes:
    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer(allow=True)


def config(tmp_path: Path, url: str, oauth: dict[str, Any] | None = None) -> Path:
    lines = ["[plugins.mcp.servers.safe]", f"url = {json.dumps(url)}"]
    if oauth:
        lines.append("[plugins.mcp.servers.safe.oauth]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in oauth.items()]
    path = tmp_path / "pegboard.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def load(tmp_path: Path, cfg: Path) -> Toolbox:
    return Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"], host=Yes())


def browse(url: str) -> None:
    """The person's browser: follows the authorization server's redirect to pegboard's loopback."""
    response = httpx.get(url, follow_redirects=True, timeout=20)
    assert response.status_code == 200 and "Signed in" in response.text


async def sign_in(session: Any) -> str:
    import anyio

    started = await session.call("mcp__safe__authenticate", {})
    assert not started.is_error, started.text_content()
    url = next(w for w in started.text_content().split() if w.startswith("http"))
    await anyio.to_thread.run_sync(browse, url)
    done = await session.call("mcp__safe__complete_authentication", {})
    assert not done.is_error, done.text_content()
    return done.text_content()


def token_files(isolated_env: Path) -> list[Path]:
    return list((isolated_env / "data" / "pegboard" / "mcp" / "oauth").glob("*.json"))


@pytest.mark.slow
async def test_authorization_code_with_registration_through_the_models_tools(
        tmp_path: Path, serve_oauth: Any, isolated_env: Path) -> None:
    server = serve_oauth()
    cfg = config(tmp_path, server.url)
    toolbox = load(tmp_path, cfg)
    # The first contact answered 401: the sign-in tools stand in for the server's.
    mine = sorted(n for n in toolbox.tools if n.startswith("mcp__safe__"))
    assert mine == ["mcp__safe__authenticate", "mcp__safe__complete_authentication"]
    assert toolbox.settings.problems == []
    async with toolbox.session() as session:
        done = await sign_in(session)
        assert "mcp__safe__whoami" in done
        assert "mcp__safe__whoami" in session.catalogue().names()
        assert "mcp__safe__authenticate" not in session.catalogue().names()
        assert (await session.call("mcp__safe__whoami", {})).text_content() == "a reader"
    (registered,) = server.log("register")
    assert registered["client_name"] == "pegboard" and registered["redirect_uris"][0].startswith("http://127.0.0.1:")
    (asked,) = server.log("authorize")
    assert asked["resource"] == server.url and asked["scope"] == "read" and asked["code_challenge_method"] == "S256"
    # Tokens: one file in the data directory, the user's alone, nothing in config or cache.
    (tokens,) = token_files(isolated_env)
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600 and stat.S_IMODE(tokens.parent.stat().st_mode) == 0o700
    access = json.loads(tokens.read_text())["tokens"]["access_token"]
    for folder in ("config", "cache"):
        for path in (isolated_env / folder).rglob("*"):
            assert not path.is_file() or access not in path.read_text(errors="replace")
    # A later toolbox has the server's tools from the start.
    assert "mcp__safe__whoami" in load(tmp_path, cfg).tools


@pytest.mark.slow
async def test_an_expired_token_is_refreshed_without_the_person(tmp_path: Path, serve_oauth: Any) -> None:
    import anyio

    server = serve_oauth(expires_in=1)
    cfg = config(tmp_path, server.url)
    async with load(tmp_path, cfg).session() as session:
        await sign_in(session)
    await anyio.sleep(1.5)
    async with load(tmp_path, cfg).session() as session:
        assert (await session.call("mcp__safe__whoami", {})).text_content() == "a reader"
    assert [e["grant_type"] for e in server.log("token")][-1] == "refresh_token"


@pytest.mark.slow
async def test_step_up_asks_for_the_union_of_scopes(tmp_path: Path, serve_oauth: Any) -> None:
    server = serve_oauth()
    cfg = config(tmp_path, server.url)
    async with load(tmp_path, cfg).session() as session:
        await sign_in(session)
        refused = await session.call("mcp__safe__admin", {})
        assert refused.is_error and "scope 'read write'" in refused.text_content()
        assert "mcp__safe__authenticate" in refused.text_content()
        await sign_in(session)
        assert (await session.call("mcp__safe__admin", {})).text_content() == "admin done"
    assert [e["scope"] for e in server.log("authorize")] == ["read", "read write"]


@pytest.mark.slow
async def test_pre_registered_client_with_a_secret_from_the_environment(
        tmp_path: Path, serve_oauth: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve_oauth(dcr=False, clients={"ours": {"secret": "s3cret", "method": "client_secret_basic"}})
    monkeypatch.setenv("SAFE_SECRET", "s3cret")
    cfg = config(tmp_path, server.url, {"client_id": "ours", "client_secret": "${SAFE_SECRET}"})
    async with load(tmp_path, cfg).session() as session:
        await sign_in(session)
        assert (await session.call("mcp__safe__whoami", {})).text_content() == "a reader"
    assert server.log("register") == [] and server.log("authorize")[0]["client_id"] == "ours"
    assert server.log("token")[0]["auth"] == "basic"
    assert "s3cret" not in cfg.read_text()


@pytest.mark.slow
async def test_client_id_metadata_document_in_place_of_registration(tmp_path: Path, serve_oauth: Any) -> None:
    server = serve_oauth(cimd=True)
    document = "https://agent.example/pegboard.json"
    cfg = config(tmp_path, server.url, {"client_metadata_url": document})
    async with load(tmp_path, cfg).session() as session:
        await sign_in(session)
    assert server.log("register") == [] and server.log("authorize")[0]["client_id"] == document


@pytest.mark.slow
async def test_client_credentials_with_a_secret(tmp_path: Path, serve_oauth: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve_oauth(clients={"svc": {"secret": "pw"}})
    monkeypatch.setenv("SVC_SECRET", "pw")
    cfg = config(tmp_path, server.url, {"grant": "client_credentials", "client_id": "svc",
                                        "client_secret": "${SVC_SECRET}"})
    toolbox = load(tmp_path, cfg)
    assert "mcp__safe__whoami" in toolbox.tools  # no person needed: listed at once
    async with toolbox.session() as session:
        assert (await session.call("mcp__safe__admin", {})).text_content() == "admin done"
    assert {e["grant_type"] for e in server.log("token")} == {"client_credentials"}


@pytest.mark.slow
async def test_client_credentials_with_a_signed_jwt(tmp_path: Path, serve_oauth: Any) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    pem = tmp_path / "key.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    server = serve_oauth(jwt_clients={"robot": public})
    cfg = config(tmp_path, server.url, {"grant": "client_credentials", "client_id": "robot",
                                        "private_key_file": str(pem), "signing_algorithm": "ES256"})
    async with load(tmp_path, cfg).session() as session:
        assert (await session.call("mcp__safe__whoami", {})).text_content() == "a reader"
    assert server.log("token")[0]["auth"] == "jwt"


@pytest.mark.slow
async def test_enterprise_identity_assertion(tmp_path: Path, serve_oauth: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve_oauth(clients={"app": {"secret": "pw"}})
    monkeypatch.setenv("APP_SECRET", "pw")
    monkeypatch.setenv("MY_ID_TOKEN", "id-token-ok")
    cfg = config(tmp_path, server.url, {"grant": "identity_assertion", "client_id": "app",
                                        "client_secret": "${APP_SECRET}", "issuer": f"{server.base}/as",
                                        "idp_token_endpoint": f"{server.base}/idp/token", "idp_client_id": "me",
                                        "id_token": "${MY_ID_TOKEN}"})
    async with load(tmp_path, cfg).session() as session:
        assert (await session.call("mcp__safe__whoami", {})).text_content() == "a reader"
    (exchange,) = server.log("idp")
    assert exchange["audience"] == f"{server.base}/as" and exchange["resource"] == server.url
    assert server.log("token")[-1]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"


@pytest.mark.slow
def test_login_with_a_browser_then_call_then_logout(tmp_path: Path, serve_oauth: Any, isolated_env: Path) -> None:
    server = serve_oauth()
    cfg = config(tmp_path, server.url)
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=20)\n")
    env = {**os.environ, "BROWSER": f"{sys.executable} {browser} %s"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PEGBOARD), "--cwd", str(tmp_path), "--config", str(cfg), *args],
                              capture_output=True, text=True, timeout=120, env=env)

    assert run("tools", "list").returncode == 0  # a listing connects to nothing
    called = run("call", "mcp__safe__whoami")  # the first real toolbox meets the 401
    said = called.stdout + called.stderr
    assert called.returncode != 0 and "There is no tool called 'mcp__safe__whoami'" in said
    assert "Offered under mcp__safe__: mcp__safe__authenticate, mcp__safe__complete_authentication" in said
    assert "Traceback" not in said  # the SDK's log of pegboard's own refusal is not printed
    assert "needs sign-in (`pegboard mcp login safe`)" in run("mcp", "list").stdout
    login = run("mcp", "login", "safe")
    assert login.returncode == 0 and "signed in to safe; 2 tools" in login.stdout, login.stderr
    assert "/as/authorize?" in login.stderr  # the link is printed too
    access = json.loads(token_files(isolated_env)[0].read_text())["tokens"]["access_token"]
    assert access not in login.stdout + login.stderr
    called = subprocess.run([str(PEGBOARD), "--cwd", str(tmp_path), "--config", str(cfg), "call", "mcp__safe__whoami",
                             "--mode", "bypassPermissions"], capture_output=True, text=True, timeout=60, env=env)
    assert called.stdout.strip() == "a reader", called.stderr
    out = run("mcp", "logout", "safe")
    assert out.returncode == 0 and "signed out of safe" in out.stdout and token_files(isolated_env) == []

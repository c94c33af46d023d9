"""``pegboard serve --http`` serves nothing without its bearer token, checks
Host and Origin on every loopback address, and takes an elicitation answer
only from the client that holds the token (issue 29). Each test starts a
real ``pegboard serve --http`` on 127.0.0.x."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

PEGBOARD = Path(sys.executable).parent / "pegboard"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                   "clientInfo": {"name": "raw", "version": "1"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    stderr: list[str] = field(default_factory=list)

    def token_path(self) -> Path:
        found = re.search(r"the token in (\S+?\.token)", "\n".join(self.stderr))
        assert found, self.stderr
        return Path(found.group(1))

    def token(self) -> str:
        return self.token_path().read_text().strip()


def start(project: Path, address: str = "127.0.0.1:0", *extra: str,
          env: dict[str, str] | None = None) -> Served:
    """``pegboard serve --http`` started, once its stderr says where it serves."""
    proc = subprocess.Popen([str(PEGBOARD), "serve", "--cwd", str(project), "--http", address, *extra],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env or child_env())
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            lines.put(raw.decode(errors="replace"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    served = Served(proc, "")
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"pegboard serve said nothing in 60 s: {served.stderr}") from None
        if line is None:
            raise AssertionError(f"pegboard serve exited ({proc.wait()}): {''.join(served.stderr)}")
        served.stderr.append(line)
        found = re.search(r"serving MCP at (\S+)", line)
        if found:
            served.url = found.group(1)
            break
    # the line after says where the token is (or the warning came before)
    if "--no-auth" not in extra:
        line = lines.get(timeout=30)
        assert line is not None
        served.stderr.append(line)
    return served


def stop(served: Served) -> None:
    served.proc.terminate()
    try:
        served.proc.wait(20)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        served.proc.wait(10)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\n")
    return root


@pytest.fixture
def served(project: Path) -> Iterator[Served]:
    running = start(project)
    try:
        yield running
    finally:
        stop(running)


def initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url, json=INIT, headers={**MCP_HEADERS, **headers}, timeout=30)


def test_no_token_or_a_wrong_one_is_refused_on_every_request(served: Served) -> None:
    missing = initialize(served.url, {})
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer ")
    wrong = initialize(served.url, {"Authorization": "Bearer " + "x" * 43})
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
    other_scheme = initialize(served.url, {"Authorization": f"Basic {served.token()}"})
    assert other_scheme.status_code == 401
    for method in ("GET", "DELETE"):
        assert httpx.request(method, served.url, headers=MCP_HEADERS, timeout=30).status_code == 401
    assert httpx.get(served.url.replace("/mcp", "/anything"), timeout=30).status_code == 401
    right = initialize(served.url, {"Authorization": f"Bearer {served.token()}"})
    assert right.status_code == 200, right.text


def test_the_token_is_new_private_and_not_printed(served: Served, project: Path) -> None:
    path = served.token_path()
    token = served.token()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(token) >= 32 and token not in "".join(served.stderr)
    assert '"Authorization: Bearer <token>"' in "".join(served.stderr)
    stop(served)
    assert not path.exists()  # gone with the server that made it
    again = start(project, "127.0.0.1:0", "--show-token")
    try:
        assert again.token() != token and again.token() in "".join(again.stderr)
    finally:
        stop(again)


@pytest.mark.anyio
async def test_the_sdk_client_with_the_token_calls_tools_and_answers_questions(served: Served,
                                                                             project: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import ElicitResult

    asked: list[str] = []

    async def allow(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": "allow"})

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.token()}"}, timeout=120) as http:
        async with Client(streamable_http_client(served.url, http_client=http), elicitation_callback=allow) as client:
            assert "Read" in {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
            assert "second line" in read.content[0].text
            written = await client.call_tool("Write", {"file_path": str(project / "w.txt"), "content": "w"})
            assert not written.is_error and (project / "w.txt").read_text() == "w" and len(asked) == 1


def test_a_token_from_a_file_or_a_variable(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "serve.token"
    secret.write_text("a-token-of-my-own-choosing-1234\n")
    secret.chmod(0o644)
    refused = subprocess.run([str(PEGBOARD), "serve", "--cwd", str(project), "--http", "127.0.0.1:0",
                              "--token-file", str(secret)], capture_output=True, text=True, timeout=120,
                             env=child_env())
    assert refused.returncode != 0 and "chmod 600" in refused.stderr and str(secret) in refused.stderr
    secret.chmod(0o600)
    from_file = start(project, "127.0.0.1:0", "--token-file", str(secret))
    try:
        assert str(secret) in "".join(from_file.stderr)
        assert initialize(from_file.url, {}).status_code == 401
        ok = initialize(from_file.url, {"Authorization": "Bearer a-token-of-my-own-choosing-1234"})
        assert ok.status_code == 200
    finally:
        stop(from_file)
    from_env = start(project, "127.0.0.1:0", "--token-env", "MY_SERVE_TOKEN",
                     env=child_env(MY_SERVE_TOKEN="another-token-from-the-env-5678"))
    try:
        assert "another-token" not in "".join(from_env.stderr)
        assert initialize(from_env.url, {"Authorization": "Bearer another-token-from-the-env-5678"}).status_code == 200
        assert initialize(from_env.url, {}).status_code == 401
    finally:
        stop(from_env)


def test_no_auth_is_warned_at_every_start(project: Path) -> None:
    served = start(project, "127.0.0.1:0", "--no-auth")
    try:
        assert "WARNING: --no-auth" in "".join(served.stderr)
        assert initialize(served.url, {}).status_code == 200
    finally:
        stop(served)


NOBODY_CLIENT = r'''
import json, sys, urllib.request, urllib.error
url, token_path = sys.argv[1], sys.argv[2]
out = {}
try:
    open(token_path).read()
    out["read_token"] = True
except OSError as exc:
    out["read_token"] = False
    out["read_error"] = type(exc).__name__
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
                   "capabilities": {}, "clientInfo": {"name": "nobody", "version": "1"}}}).encode()
request = urllib.request.Request(url, data=body, method="POST", headers={
    "content-type": "application/json", "accept": "application/json, text/event-stream"})
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        out["status"] = answer.status
except urllib.error.HTTPError as exc:
    out["status"] = exc.code
print(json.dumps(out))
'''


def test_a_second_local_user_cannot_use_it(served: Served, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to run a client as another user (nobody)")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    ran = subprocess.run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-I", "-c",
                          NOBODY_CLIENT, served.url, str(served.token_path())],
                         capture_output=True, text=True, timeout=120, cwd="/")
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen == {"read_token": False, "read_error": "PermissionError", "status": 401}, seen


def test_a_foreign_host_or_origin_is_refused_on_any_loopback_address(project: Path) -> None:
    served = start(project, "127.0.0.2:0")
    try:
        bearer = {"Authorization": f"Bearer {served.token()}"}
        port = served.url.split(":")[2].split("/")[0]
        assert initialize(served.url, {**bearer, "Host": f"attacker.example:{port}"}).status_code == 421
        refused = initialize(served.url, {**bearer, "Origin": f"http://attacker.example:{port}"})
        assert refused.status_code == 403
        assert initialize(served.url, {**bearer, "Origin": f"http://127.0.0.2:{port}"}).status_code == 200
    finally:
        stop(served)


def test_allow_remote_needs_tls_or_a_trusted_network(project: Path) -> None:
    def refused(*args: str) -> str:
        out = subprocess.run([str(PEGBOARD), "serve", "--cwd", str(project), *args], capture_output=True,
                             text=True, timeout=120, env=child_env())
        assert out.returncode != 0, out.stderr
        return out.stderr

    assert "--trusted-network" in refused("--http", "0.0.0.0:0", "--allow-remote")
    assert "--tls-cert" in refused("--http", "0.0.0.0:0", "--allow-remote")
    assert "--allow-remote" in refused("--http", "0.0.0.0:0", "--no-auth", "--allow-remote", "--trusted-network")
    assert "--allow-remote" in refused("--http", "0.0.0.0:0")
    assert "only with --http" in refused("--no-auth")


def test_an_unauthenticated_request_cannot_answer_a_question(served: Served, project: Path) -> None:
    """The question reaches the client that holds the token; an answer posted
    without the token (another local process that learned the session id)
    is refused, and the call takes the real client's answer."""
    bearer = {"Authorization": f"Bearer {served.token()}"}
    with httpx.Client(timeout=60, headers={**MCP_HEADERS, **bearer}) as http:
        started = http.post(served.url, json=INIT)
        assert started.status_code == 200, started.text
        session = {"mcp-session-id": started.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-11-25"}
        http.post(served.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        target = project / "asked.txt"
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "Write", "arguments": {"file_path": str(target), "content": "x"}}}
        result = None
        with http.stream("POST", served.url, json=call, headers=session) as events:
            for line in events.iter_lines():
                if not line.startswith("data:") or not line[5:].strip():
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "elicitation/create":
                    forged = {"jsonrpc": "2.0", "id": message["id"],
                              "result": {"action": "accept", "content": {"answer": "allow"}}}
                    stranger = httpx.post(served.url, json=forged, headers={**MCP_HEADERS, **session}, timeout=30)
                    assert stranger.status_code == 401
                    declined = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}
                    assert http.post(served.url, json=declined, headers=session).status_code in (200, 202)
                elif message.get("id") == 2:
                    result = message["result"]
                    break
        assert result is not None and result["isError"], result
        assert not target.exists()


@pytest.mark.anyio
async def test_sigterm_to_serve_http_closes_its_sessions_and_their_mcp_servers(project: Path) -> None:
    """uvicorn raises a stop signal again once it has shut down; serve --http
    closes its sessions first (here the one 2026-07-28 requests share, which
    outlives the client) and removes its token file."""
    import signal

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_servers.helpers import KITCHEN_SINK, pid_alive, wait_dead

    from _trusted import trust

    config = project / ".pegboard" / "config.toml"
    config.parent.mkdir()
    trust(project)
    config.write_text(f'[plugins.mcp.servers.ks]\ncommand = "{sys.executable}"\nargs = ["{KITCHEN_SINK}"]\n'
                      '[permissions]\nallow = ["mcp__ks"]\n')
    approved = subprocess.run([str(PEGBOARD), "--cwd", str(project), "mcp", "approve", "ks"], capture_output=True,
                              text=True, timeout=120, env=child_env())
    assert "ks: " in approved.stdout, approved.stderr
    served = start(project)
    try:
        token_path = served.token_path()
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {served.token()}"}, timeout=120) as http:
            async with Client(streamable_http_client(served.url, http_client=http)) as client:
                result = await client.call_tool("mcp__ks__spawn_grandchild", {})
                assert not result.is_error, result.content
                grandchild = int(result.content[0].text)
        assert pid_alive(grandchild)
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(30) == -signal.SIGTERM
        assert wait_dead(grandchild)
        assert not token_path.exists()
    finally:
        stop(served)


def test_allow_remote_with_tls_serves_https_and_still_asks_the_token(project: Path, tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (to make a test certificate)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True, timeout=120)
    served = start(project, "127.0.0.1:0", "--allow-remote", "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert served.url.startswith("https://127.0.0.1:")
        with httpx.Client(verify=False, timeout=30) as http:
            assert http.post(served.url, json=INIT, headers=MCP_HEADERS).status_code == 401
            bearer = {"Authorization": f"Bearer {served.token()}"}
            assert http.post(served.url, json=INIT, headers={**MCP_HEADERS, **bearer}).status_code == 200
    finally:
        stop(served)

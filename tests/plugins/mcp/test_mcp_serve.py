"""``pegboard serve`` driven by the SDK's own Client: in memory (both protocol
eras), over stdio in a subprocess, and over Streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import ElicitResult
from mcp_servers.helpers import free_port, wait_for_port
from _trusted import trust
from pegboard import Toolbox

pytestmark = pytest.mark.anyio

PEGBOARD = Path(sys.executable).parent / "pegboard"
Elicit = Callable[[Any, Any], Awaitable[ElicitResult]]



@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\n")
    return root


def answering(answer: str | None, asked: list[str]) -> Elicit:
    """An elicitation callback that records the question and answers it (None declines)."""

    async def callback(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        if answer is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"answer": answer})

    return callback


def in_memory(root: Path, mode: str | None = None) -> Any:
    from pegboard.plugins.mcp._serve import AskingHost, SessionRegistry, build_server

    toolbox = Toolbox.load(cwd=root)
    toolbox.add_host(AskingHost(toolbox), name="mcp-serve")
    registry = SessionRegistry(toolbox, mode, single_connection=True)
    return build_server(toolbox, registry), registry


@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_in_memory_list_read_ask_and_deny(project: Path, era: str) -> None:
    server, registry = in_memory(project)
    asked: list[str] = []
    try:
        async with Client(server, mode=era, elicitation_callback=answering("allow", asked)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "Read" in tools and "Write" in tools and "ToolSearch" not in tools
            assert tools["Read"].input_schema["properties"]["file_path"]
            assert tools["Read"].description and tools["Read"].annotations.read_only_hint

            read = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
            assert not read.is_error and "second line" in read.content[0].text
            assert asked == []  # a read inside the project runs without asking

            target = project / "new.txt"
            written = await client.call_tool("Write", {"file_path": str(target), "content": "hello\n"})
            assert not written.is_error, written.content[0].text
            assert target.read_text() == "hello\n"
            assert len(asked) == 1 and "Write" in asked[0]

        declined: list[str] = []
        async with Client(server, mode=era, elicitation_callback=answering(None, declined)) as client:
            other = project / "other.txt"
            denied = await client.call_tool("Write", {"file_path": str(other), "content": "no\n"})
            assert denied.is_error and "declined" in denied.content[0].text
            assert not other.exists() and len(declined) == 1
    finally:
        await registry.aclose()


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_client_without_elicitation_is_denied_with_the_rule(project: Path, era: str) -> None:
    server, registry = in_memory(project)
    try:
        async with Client(server, mode=era) as client:
            target = project / "x.txt"
            result = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
            text = result.content[0].text
            assert result.is_error and "cannot ask its user" in text
            assert "Write(" in text and "[permissions] allow" in text
            assert not target.exists()
    finally:
        await registry.aclose()


async def test_a_deny_because_the_client_cannot_ask_is_the_hosts_not_a_persons(
        project: Path, user_config: Callable[[str], Path]) -> None:
    from sqlalchemy import select

    from pegboard._services.audit import flush_all
    from pegboard._services.tables import audit

    user_config("[audit]\nenabled = true\n")
    server, registry = in_memory(project)
    try:
        async with Client(server, mode="legacy") as client:  # declares no elicitation
            result = await client.call_tool("Write", {"file_path": str(project / "x.txt"), "content": "x"})
            assert result.is_error
    finally:
        await registry.aclose()
    flush_all()
    with Toolbox.load(cwd=project).plugins.stores("pegboard").begin(read_only=True) as conn:
        (row,) = [dict(r._mapping) for r in conn.execute(select(audit).where(audit.c.tool == "Write"))]
    # nobody was asked: the serving host denied it, and the record says so
    assert (row["decision"], row["source_kind"], row["answer"]) == ("deny", "host", "declined"), row


async def test_cannot_ask_result_tells_the_model_what_to_do_and_names_a_file_that_applies(project: Path) -> None:
    """The deny the model reads when nobody can be asked: not run, do not
    retry, do not touch the settings, carry on or tell the user; and the
    rule it names, put where it says (the user's config: an untrusted
    project's allow rules are ignored), really allows the call."""
    from pegboard.paths import config_dir

    user_config = config_dir() / "config.toml"
    server, registry = in_memory(project)
    target = project / "x.txt"
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
        text = result.content[0].text
        assert result.is_error and "was not run" in text and "nothing was done" in text
        assert "Do not retry this call unchanged" in text and "do not edit pegboard's settings" in text
        assert "tell the user" in text
        assert str(user_config) in text
        assert str(project / ".pegboard" / "config.toml") not in text  # ignored there until trusted
        rule = text.split("by adding ")[1].split(" to ")[0].strip("'")
    finally:
        await registry.aclose()

    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(f"[permissions]\nallow = [{rule!r}]\n".replace("'", '"'))
    server, registry = in_memory(project)
    try:
        async with Client(server, mode="legacy") as client:
            again = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
        assert not again.is_error, again.content[0].text
        assert target.read_text() == "x"
    finally:
        await registry.aclose()


async def test_cannot_ask_result_names_the_project_config_once_trusted(project: Path) -> None:
    trust(project)
    server, registry = in_memory(project)
    try:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("Write", {"file_path": str(project / "x.txt"), "content": "x"})
        assert result.is_error and str(project / ".pegboard" / "config.toml") in result.content[0].text
    finally:
        await registry.aclose()


async def test_allow_session_answer_is_remembered(project: Path) -> None:
    server, registry = in_memory(project)
    asked: list[str] = []
    try:
        async with Client(server, mode="legacy", elicitation_callback=answering("allow_session", asked)) as client:
            for name in ("a.txt", "b.txt"):
                result = await client.call_tool("Write", {"file_path": str(project / name), "content": name})
                assert not result.is_error, result.content[0].text
        assert len(asked) == 1  # the second write fell under the remembered rule
    finally:
        await registry.aclose()


async def test_invalid_arguments_and_unknown_tool_are_results(project: Path) -> None:
    server, registry = in_memory(project)
    try:
        async with Client(server) as client:
            bad = await client.call_tool("Read", {"nope": 1})
            assert bad.is_error and "file_path" in bad.content[0].text
            unknown = await client.call_tool("NoSuchTool", {})
            assert unknown.is_error and "NoSuchTool" in unknown.content[0].text
    finally:
        await registry.aclose()


def child_env() -> dict[str, str]:
    keys = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PEGBOARD_POLICY")
    return {k: os.environ[k] for k in keys if k in os.environ}


@pytest.mark.slow
async def test_stdio_subprocess(project: Path) -> None:
    params = StdioServerParameters(command=str(PEGBOARD), args=["serve", "--cwd", str(project)], env=child_env())
    asked: list[str] = []
    async with Client(params, elicitation_callback=answering("allow", asked)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"Read", "Write", "Edit"} <= names
        read = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
        assert "first line" in read.content[0].text
        written = await client.call_tool("Write", {"file_path": str(project / "w.txt"), "content": "w"})
        assert not written.is_error and (project / "w.txt").read_text() == "w" and len(asked) == 1
    async with Client(params, elicitation_callback=answering("deny", asked)) as client:
        denied = await client.call_tool("Write", {"file_path": str(project / "d.txt"), "content": "d"})
        assert denied.is_error and "denied" in denied.content[0].text and not (project / "d.txt").exists()


# serve --http asks every request for its bearer token (tests/plugins/mcp/test_mcp_serve_auth.py): here it is
# given through --token-env, as a client's launcher would.
HTTP_TOKEN = "pegboard-serve-test-token-0123456789"


@pytest.fixture
def http_serve(project: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([str(PEGBOARD), "serve", "--cwd", str(project), "--http", f"127.0.0.1:{port}",
                             "--token-env", "SERVE_TOKEN"],
                            env={**os.environ, **child_env(), "SERVE_TOKEN": HTTP_TOKEN}, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@asynccontextmanager
async def http_client(url: str, **options: Any) -> AsyncIterator[Client]:
    """The SDK's client for ``url``, sending the bearer token on every request."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


@pytest.mark.slow
@pytest.mark.parametrize("era", ["legacy", "auto"])
async def test_streamable_http(project: Path, http_serve: str, era: str) -> None:
    asked: list[str] = []
    async with http_client(http_serve, mode=era, elicitation_callback=answering("allow", asked)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "Read" in names
        read = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
        assert "second line" in read.content[0].text
        target = project / f"http-{era}.txt"
        written = await client.call_tool("Write", {"file_path": str(target), "content": era})
        assert not written.is_error, written.content[0].text
        assert target.read_text() == era and len(asked) == 1
    async with http_client(http_serve, mode=era, elicitation_callback=answering(None, asked)) as client:
        target = project / f"http-denied-{era}.txt"
        denied = await client.call_tool("Write", {"file_path": str(target), "content": "x"})
        assert denied.is_error and not target.exists()


@pytest.mark.slow
def test_http_refuses_a_remote_address_without_the_flag(project: Path) -> None:
    out = subprocess.run([str(PEGBOARD), "serve", "--cwd", str(project), "--http", "0.0.0.0:1"],
                         env={**os.environ, **child_env()}, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--allow-remote" in out.stderr


def serve_with_kitchen_sink(project: Path) -> StdioServerParameters:
    from mcp_servers.helpers import KITCHEN_SINK

    config = project / ".pegboard" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    trust(project)  # the project's own server and allow rule apply only in a trusted folder
    config.write_text(f'[plugins.mcp.servers.ks]\ncommand = "{sys.executable}"\nargs = ["{KITCHEN_SINK}"]\n'
                      '[permissions]\nallow = ["mcp__ks"]\n')
    return StdioServerParameters(command=str(PEGBOARD), args=["serve", "--cwd", str(project)], env=child_env())


@pytest.mark.slow
async def test_serve_reexposes_mcp_tools_and_stops_them_with_the_connection(project: Path) -> None:
    from mcp_servers.helpers import pid_alive, wait_dead

    params = serve_with_kitchen_sink(project)
    refresh = subprocess.run([str(PEGBOARD), "--cwd", str(project), "mcp", "approve", "ks"], capture_output=True,
                             text=True, timeout=120, env={**os.environ, **child_env()})
    assert "ks: 12 tools" in refresh.stdout, refresh.stderr + refresh.stdout
    async with Client(params) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert "mcp__ks__echo" in listed and "ListMcpResourcesTool" in listed
        # a server's tool title survives both ways: recorded by the client side, offered again by serve
        assert listed["mcp__ks__whoami"].title == "Process id" and listed["mcp__ks__echo"].title is None
        result = await client.call_tool("mcp__ks__spawn_grandchild", {})
        assert not result.is_error, result.content
        grandchild = int(result.content[0].text)
        assert pid_alive(grandchild)
    # The client closed stdin: serve ended its session, which stopped ks and its child.
    assert wait_dead(grandchild)


@pytest.mark.slow
def test_sigterm_to_serve_stops_mcp_servers(project: Path) -> None:
    import json as _json
    import signal

    from mcp_servers.helpers import pid_alive, wait_dead

    params = serve_with_kitchen_sink(project)
    subprocess.run([str(PEGBOARD), "--cwd", str(project), "mcp", "approve", "ks"], capture_output=True, timeout=120,
                   env={**os.environ, **child_env()})
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, **child_env()})
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((_json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def receive() -> dict[str, Any]:
        return _json.loads(proc.stdout.readline())  # type: ignore[union-attr]

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert receive()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "mcp__ks__spawn_grandchild", "arguments": {}}})
        reply = receive()
        grandchild = int(reply["result"]["content"][0]["text"])
        assert pid_alive(grandchild)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert wait_dead(grandchild)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
async def test_http_sessions_do_not_share_remembered_answers(project: Path, http_serve: str) -> None:
    choices: list[list[str]] = []

    def remembering(asked: list[str]) -> Elicit:
        async def callback(context: Any, params: Any) -> ElicitResult:
            asked.append(params.message)
            choices.append(params.requested_schema["properties"]["answer"]["enum"])
            answer = "allow_session" if "allow_session" in choices[-1] else "allow"
            return ElicitResult(action="accept", content={"answer": answer})

        return callback

    first: list[str] = []
    second: list[str] = []
    # Handshake-era clients each have an MCP session id, hence a pegboard session each.
    async with http_client(http_serve, mode="legacy", elicitation_callback=remembering(first)) as a, \
            http_client(http_serve, mode="legacy", elicitation_callback=remembering(second)) as b:
        for name in ("a1.txt", "a2.txt"):
            assert not (await a.call_tool("Write", {"file_path": str(project / name), "content": "a"})).is_error
        assert len(first) == 1  # remembered for a's session
        assert not (await b.call_tool("Write", {"file_path": str(project / "b1.txt"), "content": "b"})).is_error
        assert len(second) == 1  # b was asked: a's answer did not leak
    assert choices[0] == ["allow", "allow_session", "deny"]

    # 2026-07-28 requests over HTTP carry no connection: nothing may be remembered across them.
    choices.clear()
    modern: list[str] = []
    async with http_client(http_serve, elicitation_callback=remembering(modern)) as c:
        for name in ("m1.txt", "m2.txt"):
            assert not (await c.call_tool("Write", {"file_path": str(project / name), "content": "m"})).is_error
    assert choices == [["allow", "deny"], ["allow", "deny"]]

"""The server manager against real SDK servers: stdio subprocess, Streamable
HTTP on 127.0.0.1, and in memory; crashes, hangs, restarts, process groups."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_servers.helpers import KITCHEN_SINK, pid_alive, start_http_server, wait_dead
from pegboard.plugins.mcp._config import ServerConfig, ServerSpec
from pegboard.plugins.mcp._content import resource_contents, to_tool_result
from pegboard.plugins.mcp._manager import ServerConnection, ServerUnavailable, ToolCallTimeout

pytestmark = pytest.mark.anyio



def stdio_spec(tmp_path: Path, name: str = "ks", **extra: object) -> ServerSpec:
    cfg = ServerConfig(command=sys.executable, args=[str(KITCHEN_SINK)], **extra)  # type: ignore[arg-type]
    return ServerSpec(name, cfg, "test", False, tmp_path)


@pytest.fixture
def http_url() -> Iterator[str]:
    proc, url = start_http_server()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
async def test_stdio_server_calls_and_content(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    try:
        result = to_tool_result(await conn.call_tool("echo", {"text": "hello"}))
        assert result.text_content() == "hello"
        assert result.structured_content == {"result": "hello"}
        assert not result.is_error
        assert "spawn_grandchild" in conn.tools

        image = to_tool_result(await conn.call_tool("picture", {}))
        assert image.content[0].type == "image"
        assert image.content[0].mime_type == "image/png"  # type: ignore[union-attr]

        bundle = to_tool_result(await conn.call_tool("bundle", {}))
        kinds = [c.type for c in bundle.content]
        assert kinds == ["text", "resource"]
        assert bundle.content[1].uri == "memo://one" and bundle.content[1].text == "the memo"  # type: ignore[union-attr]

        failed = to_tool_result(await conn.call_tool("fail", {"why": "the disk is full"}))
        assert failed.is_error and "the disk is full" in failed.text_content()

        resources = await conn.list_resources()
        assert {str(r.uri) for r in resources} >= {"docs://readme", "docs://guide/intro", "docs://logo"}
        logo = resource_contents((await conn.read_resource("docs://logo")).contents)
        assert logo[0].type == "image"
    finally:
        await conn.stop()
    assert conn.state == "stopped"


@pytest.mark.slow
async def test_http_server(tmp_path: Path, http_url: str) -> None:
    spec = ServerSpec("web", ServerConfig(url=http_url), "test", False, tmp_path)
    conn = ServerConnection(spec)
    try:
        result = to_tool_result(await conn.call_tool("add", {"a": 2, "b": 40}))
        assert result.structured_content == {"sum": 42}
    finally:
        await conn.stop()


async def test_in_memory_server(tmp_path: Path) -> None:
    from mcp_servers.kitchen_sink import build

    spec = ServerSpec("mem", ServerConfig(command="unused"), "test", False, tmp_path)
    conn = ServerConnection(spec, target=build())
    try:
        result = to_tool_result(await conn.call_tool("echo", {"text": "in memory"}))
        assert result.text_content() == "in memory"
    finally:
        await conn.stop()


@pytest.mark.slow
async def test_crash_mid_call_marks_unavailable_then_restarts(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    try:
        first_pid = (await conn.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
        with pytest.raises(ServerUnavailable) as info:
            await conn.call_tool("crash", {})
        assert "crashing on purpose" in str(info.value)
        assert conn.state == "failed"
        # The first restart is immediate: the next call works again.
        second_pid = (await conn.call_tool("whoami", {})).content[0].text  # type: ignore[union-attr]
        assert second_pid != first_pid
        assert conn.starts == 2
    finally:
        await conn.stop()


async def test_repeated_failures_back_off(tmp_path: Path) -> None:
    spec = ServerSpec("bad", ServerConfig(command=sys.executable, args=["-c", "import sys; sys.exit(5)"]),
                      "test", False, tmp_path)
    conn = ServerConnection(spec, log_dir=tmp_path)
    with pytest.raises(ServerUnavailable, match="failed to start"):
        await conn.ensure_started()
    with pytest.raises(ServerUnavailable, match="failed to start"):
        await conn.ensure_started()  # first retry is immediate
    with pytest.raises(ServerUnavailable, match="next restart is attempted in"):
        await conn.ensure_started()  # now it waits instead of spawning again
    assert conn.starts == 2


@pytest.mark.slow
async def test_server_that_never_answers(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    try:
        with pytest.raises(ToolCallTimeout, match="no answer within 0.5 s"):
            await conn.call_tool("hang", {}, timeout=0.5)
        # One stuck call does not take the server down.
        assert to_tool_result(await conn.call_tool("echo", {"text": "still here"})).text_content() == "still here"
    finally:
        await conn.stop()


@pytest.mark.slow
async def test_startup_timeout(tmp_path: Path) -> None:
    spec = stdio_spec(tmp_path, env={"KS_NEVER_START": "1"}, startup_timeout_s=1.0)
    conn = ServerConnection(spec, log_dir=tmp_path)
    with pytest.raises(ServerUnavailable, match="did not start within 1 s"):
        await conn.ensure_started()
    assert conn.state == "failed"
    assert conn.process.pid is not None and wait_dead(conn.process.pid)


@pytest.mark.slow
async def test_stop_kills_grandchildren(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    pid = int((await conn.call_tool("spawn_grandchild", {})).content[0].text)  # type: ignore[union-attr]
    assert pid_alive(pid)
    await conn.stop()
    assert wait_dead(pid)


@pytest.mark.slow
async def test_crash_kills_grandchildren(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    try:
        pid = int((await conn.call_tool("spawn_grandchild", {})).content[0].text)  # type: ignore[union-attr]
        with pytest.raises(ServerUnavailable):
            await conn.call_tool("crash", {})
        assert wait_dead(pid)
    finally:
        await conn.stop()


async def test_missing_command_is_a_clear_error(tmp_path: Path) -> None:
    spec = ServerSpec("nope", ServerConfig(command="/definitely/not/here"), "test", False, tmp_path)
    conn = ServerConnection(spec, log_dir=tmp_path)
    with pytest.raises(ServerUnavailable, match="nope.*failed to start"):
        await conn.ensure_started()


@pytest.mark.slow
async def test_concurrent_first_calls_share_one_start(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    try:
        results = await asyncio.gather(*(conn.call_tool("echo", {"text": str(i)}) for i in range(5)))
        assert [r.content[0].text for r in results] == [str(i) for i in range(5)]  # type: ignore[union-attr]
        assert conn.starts == 1
    finally:
        await conn.stop()


@pytest.mark.slow
@pytest.mark.parametrize(("target", "mode"), [("stdio", "auto"), ("memory", "auto"), ("stdio", "legacy")])
async def test_tool_list_change_is_seen_without_a_restart(tmp_path: Path, target: str, mode: str) -> None:
    from mcp_servers.kitchen_sink import build

    seen: list[str | None] = []
    changed = asyncio.Event()

    def on_listing(conn: ServerConnection, tools: list) -> None:  # type: ignore[type-arg]
        seen.append(next(t.description for t in tools if t.name == "echo"))
        if len(seen) > 1:
            changed.set()

    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path, on_listing=on_listing,
                            target=build() if target == "memory" else None, mode=mode)
    try:
        await conn.call_tool("mutate", {"description": "Echo, now with telemetry."})
        await asyncio.wait_for(changed.wait(), 10)
        assert seen[-1] == "Echo, now with telemetry."
        assert conn.tools["echo"].description == "Echo, now with telemetry."
        assert conn.starts == 1
    finally:
        await conn.stop()


@pytest.mark.slow
async def test_stop_kills_a_grandchild_that_ignores_sigterm(tmp_path: Path) -> None:
    conn = ServerConnection(stdio_spec(tmp_path), log_dir=tmp_path)
    pid = int((await conn.call_tool("spawn_stubborn_grandchild", {})).content[0].text)  # type: ignore[union-attr]
    assert pid_alive(pid)
    await conn.stop()
    assert wait_dead(pid)


@pytest.mark.slow
async def test_a_server_started_without_a_log_folder_leaves_no_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    conn = ServerConnection(stdio_spec(tmp_path))  # no log_dir: the server's stderr goes to a private folder
    try:
        assert to_tool_result(await conn.call_tool("echo", {"text": "hi"})).text_content() == "hi"
        (folder,) = temp.glob("pegboard-mcp-*")
        assert (folder / "mcp-ks.stderr.log").is_file()
        with pytest.raises(ServerUnavailable):
            await conn.call_tool("crash", {})
        await conn.call_tool("whoami", {})  # the restart keeps the same folder
        assert list(temp.glob("pegboard-mcp-*")) == [folder]
    finally:
        await conn.stop()
    assert list(temp.iterdir()) == []

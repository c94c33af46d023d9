"""Issue 29's promise: the OAuth sign-in redirect listens on 127.0.0.1 only,
never on every address (0.0.0.0 or ::), so no other machine can hand
pegboard an authorization code. Checked on the sockets the kernel lists,
during a real sign-in against tests/mcp_servers/oauth_server.py."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp_servers.helpers import free_port
from test_mcp_oauth import browse, config, load, serve_oauth  # noqa: F401

pytestmark = pytest.mark.anyio

_LISTEN = "0A"


def listeners(port: int) -> list[str]:
    """The local addresses of every TCP socket listening on ``port``, as the
    kernel lists them (/proc/net/tcp and tcp6), whichever process holds it."""
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] != _LISTEN or int(hex_port, 16) != port:
                continue
            if width == 8:
                found.append(socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1]))
            else:
                raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, 32, 8))
                found.append(socket.inet_ntop(socket.AF_INET6, raw))
    return found


def refused_on(address: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(5)
        return probe.connect_ex((address, port)) != 0


async def test_the_loopback_callback_listens_on_127_0_0_1_only() -> None:
    pytest.importorskip("mcp")
    from pegboard.plugins.mcp._auth import LoopbackCallback

    port = free_port()
    callback = LoopbackCallback(port)
    await callback.start()
    try:
        assert listeners(port) == ["127.0.0.1"]
        # 127.0.0.2 is loopback too, but not the address listened on: a wildcard listener would answer it
        assert refused_on("127.0.0.2", port) and not refused_on("127.0.0.1", port)
    finally:
        await callback.close()
    assert listeners(port) == []


@pytest.mark.slow
async def test_a_real_sign_in_listens_for_its_redirect_on_127_0_0_1_only(tmp_path: Path, serve_oauth: Any) -> None:
    import anyio

    server = serve_oauth()
    toolbox = load(tmp_path, config(tmp_path, server.url))
    async with toolbox.session() as session:
        started = await session.call("mcp__safe__authenticate", {})
        assert not started.is_error, started.text_content()
        url = next(w for w in started.text_content().split() if w.startswith("http"))
        redirect = urlsplit(parse_qs(urlsplit(url).query)["redirect_uri"][0])
        assert redirect.hostname == "127.0.0.1" and redirect.port is not None
        # while the flow waits for the person's browser
        assert listeners(redirect.port) == ["127.0.0.1"]
        assert refused_on("127.0.0.2", redirect.port)
        await anyio.to_thread.run_sync(browse, url)
        done = await session.call("mcp__safe__complete_authentication", {})
        assert not done.is_error, done.text_content()
    assert listeners(redirect.port) == []

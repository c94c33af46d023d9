"""The first call to an MCP tool starts the server it needs first and the
others in the background: a down or slow server costs the call nothing, and
closing the session stops the servers started behind it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_servers.helpers import KITCHEN_SINK, pid_alive, wait_dead
from pegboard import Toolbox
from pegboard.plugins.mcp._manager import ServerConnection

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# The kitchen sink, unless a file says to misbehave: "exit" (gone at once),
# "hang" (never answers), "slow" (answers initialize after 5 s).
WRAPPER = '''
import sys, time, runpy
from pathlib import Path
mode = Path(sys.argv[1])
how = mode.read_text().strip() if mode.exists() else ""
if how == "exit":
    print("down on purpose", file=sys.stderr)
    sys.exit(3)
if how == "hang":
    time.sleep(60)
if how == "slow":
    time.sleep(5)
sys.argv = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def configure(root: Path, names: list[str], timeouts: dict[str, float] | None = None) -> Path:
    wrapper = root / "wrapper.py"
    wrapper.write_text(WRAPPER)
    config = root / "pegboard.toml"

    def write(timeouts: dict[str, float]) -> None:
        lines = []
        for name in names:
            lines.append(f"[plugins.mcp.servers.{name}]")
            lines.append(f"command = {json.dumps(sys.executable)}")
            lines.append(f"args = {json.dumps([str(wrapper), str(root / f'{name}.mode'), str(KITCHEN_SINK)])}")
            if name in timeouts:
                lines.append(f"startup_timeout_s = {timeouts[name]}")
        lines.append(f"[permissions]\nallow = {json.dumps([f'mcp__{n}' for n in names])}")
        config.write_text("\n".join(lines) + "\n")

    # The first toolbox records every server's tools, as in normal use, with
    # the default start timeout (a busy machine); the timeout is no part of
    # the definition the record is keyed on.
    write({})
    first = Toolbox.load(cwd=root, config=config, plugins=["mcp"])
    assert all(f"mcp__{n}__echo" in first.tools for n in names), first.settings.problems
    write(timeouts or {})
    return config


def misbehave(root: Path, name: str, how: str) -> None:
    (root / f"{name}.mode").write_text(how)


def session_of(root: Path, config: Path) -> Any:
    return Toolbox.load(cwd=root, config=config, plugins=["mcp"]).session()


async def until(check: Any, limit_s: float = 20.0) -> bool:
    for _ in range(int(limit_s / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["exit", "hang"])
async def test_a_down_server_costs_the_others_nothing_and_is_explained(tmp_path: Path, how: str) -> None:
    config = configure(tmp_path, ["a", "down", "c"], {"down": 3})
    misbehave(tmp_path, "down", how)
    async with session_of(tmp_path, config) as session:
        first = await session.call("mcp__a__echo", {"text": "one"})
        assert not first.is_error and first.text_content() == "one"
        down = await session.call("mcp__down__echo", {"text": "two"})
        text = down.text_content()
        assert down.is_error and "mcp__down__echo is unavailable: MCP server 'down'" in text
        assert ("down on purpose" in text) if how == "exit" else ("did not start within 3 s" in text)
        assert "Other tools keep working." in text and "Traceback" not in text
        third = await session.call("mcp__c__echo", {"text": "three"})
        assert not third.is_error and third.text_content() == "three"


async def test_the_first_call_does_not_wait_for_a_slow_server(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    config = configure(tmp_path, ["a", "b"])
    misbehave(tmp_path, "b", "slow")
    session = session_of(tmp_path, config)
    # What every other server was doing when each start began.
    seen: dict[str, dict[str, str]] = {}
    start = ServerConnection._start

    async def recording(self: ServerConnection) -> None:
        pool = session.plugin_state("mcp")["pool"]
        seen[self.name] = {n: c.state for n, c in pool.connections.items() if n != self.name}
        await start(self)

    monkeypatch.setattr(ServerConnection, "_start", recording)
    try:
        result = await session.call("mcp__a__echo", {"text": "quick"})
        assert not result.is_error and result.text_content() == "quick"
        pool = session.plugin_state("mcp")["pool"]
        assert pool.connections["a"].state == "running"
        assert pool.connections["b"].state != "running"  # b had not answered when a's result came
        assert seen["a"] == {"b": "stopped"}  # a was started first, alone
        assert await until(lambda: "b" in seen)  # and b behind it, in the background
        assert seen["b"] == {"a": "running"}
    finally:
        await session.aclose()


async def test_closing_stops_the_servers_started_in_the_background(tmp_path: Path) -> None:
    config = configure(tmp_path, ["a", "b", "slow"])
    misbehave(tmp_path, "slow", "slow")
    session = session_of(tmp_path, config)
    assert not (await session.call("mcp__a__echo", {"text": "x"})).is_error
    pool = session.plugin_state("mcp")["pool"]
    b, slow = pool.connections["b"], pool.connections["slow"]
    # b is up behind the call; slow is still on its way up when the session closes.
    assert await until(lambda: b.state == "running" and slow.process.pid is not None)
    assert slow.state == "starting"
    pids = [c.process.pid for c in pool.connections.values()]
    assert all(pid is not None and pid_alive(pid) for pid in pids)
    await session.aclose()
    assert all(wait_dead(pid) for pid in pids if pid is not None)
    assert all(c.state == "stopped" for c in pool.connections.values())

"""Two ``pegboard serve --http`` replicas on 127.0.0.1 sharing the real
PostgreSQL store, behind a small proxy that sends each request to the
other one: a client's session carries on across both, a call that waits
for an approver on one is answered from anywhere and completes, and a
replica killed mid-session loses nothing the other cannot finish or refuse."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from _alternating_proxy import AlternatingProxy
from _served import Serve, add_key, mcp_client, pegboard, pg_store, replicas  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\nsecond line\n")
    return root


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def calls_on(served: Serve) -> list[dict[str, Any]]:
    return [e for e in served.drain() if e["event"] == "call"]


def waiting_call(project: Path, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listed = pegboard(project, "approvals", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        found = [c for c in json.loads(listed.stdout) if c["status"] == "pending"]
        if found:
            return found[0]
        time.sleep(0.3)
    raise AssertionError("no call came to wait for an approver")


@pytest.mark.anyio
async def test_a_session_carries_on_across_both_replicas(replicas: tuple[Serve, Serve], project: Path,
                                                         user_config: Callable[[str], Path]) -> None:
    first, second = replicas
    alice = add_key(project, "alice")
    with AlternatingProxy([first.base, second.base]) as proxy:
        async with mcp_client(proxy.base + "/mcp", alice) as client:
            for n in range(4):
                result = await client.call_tool("Read", {"file_path": str(project / "notes.txt"),
                                                        "scratchpad": f"notes{n}"})
                assert not result.is_error, text(result)
            # what one replica saved in the session, the other reads back
            listed = await client.list_resources()
            assert {f"notes{n}" for n in range(4)} <= {r.name for r in listed.resources}
            read = await client.read_resource("pegboard://scratchpad/notes0")
            assert "second line" in read.contents[0].text
    assert proxy.sent[first.base] > 2 and proxy.sent[second.base] > 2
    sessions = {e["session"] for e in calls_on(first) + calls_on(second)}
    assert len(sessions) == 1 and all(e["client"] == "alice" for e in calls_on(first) + calls_on(second))
    assert calls_on(first) and calls_on(second)


@pytest.mark.anyio
async def test_a_call_waiting_on_one_replica_is_approved_from_anywhere_and_completes(
        replicas: tuple[Serve, Serve], project: Path) -> None:
    first, second = replicas
    bob = add_key(project, "bob")
    target = project / "approved.txt"
    results: list[Any] = []

    async def call() -> None:
        async with mcp_client(first.url, bob) as client:  # held by the first replica
            results.append(await client.call_tool("Write", {"file_path": str(target), "content": "yes"}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        waiting = await anyio.to_thread.run_sync(waiting_call, project)
        assert waiting["tool"] == "Write" and waiting["requester"] == "bob" and not target.exists()
        # answered in another process: the CLI (the approvals page does the same)
        approved = await anyio.to_thread.run_sync(lambda: pegboard(project, "approvals", "approve", waiting["id"]))
        assert approved.returncode == 0, approved.stderr
    (result,) = results
    assert not result.is_error, text(result)
    assert target.read_text() == "yes"
    settled = [e for e in first.drain() if e["event"] == "approval.settled"]
    assert settled and settled[0]["allowed"] is True and settled[0]["client"] == "bob"


@pytest.mark.anyio
async def test_a_denial_with_a_message_reaches_the_model(replicas: tuple[Serve, Serve], project: Path) -> None:
    first, _ = replicas
    carol = add_key(project, "carol")
    results: list[Any] = []

    async def call() -> None:
        async with mcp_client(first.url, carol) as client:
            results.append(await client.call_tool("Write", {"file_path": str(project / "no.txt"), "content": "x"}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        waiting = await anyio.to_thread.run_sync(waiting_call, project)
        denied = await anyio.to_thread.run_sync(lambda: pegboard(
            project, "approvals", "deny", waiting["id"], "--message", "write it under docs/ instead"))
        assert denied.returncode == 0, denied.stderr
    (result,) = results
    assert result.is_error and "write it under docs/ instead" in text(result)
    assert not (project / "no.txt").exists()


@pytest.mark.anyio
async def test_a_replica_killed_mid_session_the_client_carries_on(replicas: tuple[Serve, Serve],
                                                                 project: Path) -> None:
    first, second = replicas
    dave = add_key(project, "dave")
    with AlternatingProxy([first.base, second.base]) as proxy:
        async with mcp_client(first.url, dave) as client:  # kept in the session through the first replica
            assert not (await client.call_tool("Read", {"file_path": str(project / "notes.txt"),
                                                        "scratchpad": "before"})).is_error
        async with mcp_client(proxy.base + "/mcp", dave) as client:
            for _ in range(2):
                assert not (await client.call_tool("Read", {"file_path": str(project / "notes.txt")})).is_error
            first.proc.send_signal(signal.SIGKILL)
            first.proc.wait(10)
            for _ in range(4):
                result = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
                assert not result.is_error, text(result)
            # what the session kept through the dead replica, the live one has
            kept = await client.read_resource("pegboard://scratchpad/before")
            assert "second line" in kept.contents[0].text
    assert len(calls_on(second)) >= 4


@pytest.mark.anyio
async def test_a_call_left_by_a_dead_replica_is_taken_over_by_a_retry(replicas: tuple[Serve, Serve],
                                                                     project: Path) -> None:
    """The replica holding a waiting call dies; the client asks again through
    the other, which takes the call over with the approval given meanwhile."""
    first, second = replicas
    erin = add_key(project, "erin")
    target = project / "retried.txt"
    write = {"file_path": str(target), "content": "once"}

    async def doomed() -> None:
        try:
            async with mcp_client(first.url, erin) as client:
                await client.call_tool("Write", write)
        except BaseException:  # noqa: BLE001  (its replica is killed under it)
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(doomed)
        waiting = await anyio.to_thread.run_sync(waiting_call, project)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        tg.cancel_scope.cancel()
    killed = time.monotonic()
    approved = pegboard(project, "approvals", "approve", waiting["id"])
    assert approved.returncode == 0, approved.stderr
    # the dead replica's heartbeat goes stale (replica_timeout_s = 3); the call is kept twice as long again
    time.sleep(max(0.0, 3.5 - (time.monotonic() - killed)))
    async with mcp_client(second.url, erin) as client:
        result = await client.call_tool("Write", write)
    assert not result.is_error, text(result)
    assert target.read_text() == "once"
    events = second.drain()
    assert any(e["event"] == "approval.taken_over" and e["pending"] == waiting["id"] for e in events), events
    listed = json.loads(pegboard(project, "approvals", "list", "--json").stdout)
    assert listed == []  # settled once, run once


@pytest.mark.anyio
async def test_a_call_nobody_asks_for_again_is_refused_cleanly(replicas: tuple[Serve, Serve], project: Path) -> None:
    first, second = replicas
    frank = add_key(project, "frank")

    async def doomed() -> None:
        try:
            async with mcp_client(first.url, frank) as client:
                await client.call_tool("Write", {"file_path": str(project / "never.txt"), "content": "x"})
        except BaseException:  # noqa: BLE001
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(doomed)
        waiting = await anyio.to_thread.run_sync(waiting_call, project)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        tg.cancel_scope.cancel()
    approved = pegboard(project, "approvals", "approve", waiting["id"])  # approved, but its requester is gone
    assert approved.returncode == 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not json.loads(pegboard(project, "approvals", "list", "--json").stdout):
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the abandoned call was never settled")
    assert not (project / "never.txt").exists()
    assert any(e["event"] == "approval.refused_abandoned" and e["pending"] == waiting["id"]
               for e in second.drain())

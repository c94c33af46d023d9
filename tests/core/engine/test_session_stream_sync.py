"""Session.call's timeout_s, Session.stream (a call's output as it comes)
and session.sync (the blocking facade), inside and outside a running loop."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pegboard import Tool, ToolContext, ToolResult, Toolbox, hookimpl

pytestmark = pytest.mark.anyio


class WaitIn(BaseModel):
    seconds: float
    lines: int = 0


async def wait(args: WaitIn, ctx: ToolContext) -> str:
    for number in range(args.lines):
        ctx.output(f"line {number}")
        await asyncio.sleep(0)
    await asyncio.sleep(args.seconds)
    return f"waited {args.seconds:g} s"


class Waiting:
    """One tool that prints lines, then sleeps."""

    @hookimpl
    def pegboard_register_tools(self, register: Callable[[Tool], None]) -> None:
        register(Tool(name="Wait", handler=wait, input_model=WaitIn, read_only=True, permission="read"))


def _session(root: Path, plugins: list[str] | None = None) -> Any:
    return Toolbox.load(cwd=root, plugins=plugins or [], extra_plugins={"waiting": Waiting()}).session("default")


async def test_timeout_s_stops_a_call_in_a_running_loop(tmp_path: Path) -> None:
    session = _session(tmp_path)
    stopped = await session.call("Wait", {"seconds": 30}, timeout_s=0.05)
    assert stopped.is_error and "did not finish within 0.05 s" in stopped.text_content()
    done = await session.call("Wait", {"seconds": 0}, timeout_s=5)
    assert not done.is_error and done.text_content() == "waited 0 s"
    with pytest.raises(ValueError, match="timeout_s"):
        await session.call("Wait", {"seconds": 0}, timeout_s=0)


def test_the_sync_facade_outside_a_loop(tmp_path: Path) -> None:
    session = _session(tmp_path)
    with session.sync as sync:
        assert sync.call("Wait", {"seconds": 0}).text_content() == "waited 0 s"
        stopped = sync.call("Wait", {"seconds": 30}, timeout_s=0.05)
        assert stopped.is_error and "did not finish within 0.05 s" in stopped.text_content()
        assert [r.text_content() for r in sync.call_batch([("Wait", {"seconds": 0}), ("Wait", {"seconds": 0})])] \
            == ["waited 0 s", "waited 0 s"]
        assert sync.decide("Wait", {"seconds": 1}).decision == "allow"
        stream = sync.stream("Wait", {"seconds": 0, "lines": 2})
        assert [e.text for e in stream] == ["line 0", "line 1"]
        assert stream.result is not None and stream.result.text_content() == "waited 0 s"
    assert session.closed


async def test_the_sync_facade_inside_a_running_loop(tmp_path: Path) -> None:
    """A notebook cell or a sync framework called from async code: asyncio.run
    would refuse; the facade runs the call on the session's own loop."""
    session = _session(tmp_path)
    refused = session.call("Wait", {"seconds": 0})
    with pytest.raises(RuntimeError):
        asyncio.run(refused)  # what the facade spares the caller
    refused.close()
    assert session.sync.call("Wait", {"seconds": 0}).text_content() == "waited 0 s"
    stopped = session.sync.call("Wait", {"seconds": 30}, timeout_s=0.05)
    assert stopped.is_error and "did not finish within 0.05 s" in stopped.text_content()
    session.sync.close()
    assert session.closed


async def test_the_sync_facade_refuses_its_own_loop(tmp_path: Path) -> None:
    seen: list[str] = []

    async def inner(args: WaitIn, ctx: ToolContext) -> str:
        try:
            ctx.session.sync.call("Wait", {"seconds": 0})
        except RuntimeError as exc:
            seen.append(str(exc))
        return "ok"

    class Inner:
        @hookimpl
        def pegboard_register_tools(self, register: Callable[[Tool], None]) -> None:
            register(Tool(name="Inner", handler=inner, input_model=WaitIn, read_only=True, permission="read"))

    session = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"waiting": Waiting(), "inner": Inner()}) \
        .session("default")
    assert session.sync.call("Inner", {"seconds": 0}).text_content() == "ok"
    assert seen and "session's own event loop" in seen[0]
    session.sync.close()


async def test_a_stream_yields_events_then_keeps_the_result(tmp_path: Path) -> None:
    session = _session(tmp_path)
    stream = session.stream("Wait", {"seconds": 0, "lines": 3}, call_id="s1")
    events = [event async for event in stream]
    assert [(e.kind, e.text, e.data["call_id"], e.data["tool"]) for e in events] == \
        [("output", f"line {n}", "s1", "Wait") for n in range(3)]
    assert isinstance(stream.result, ToolResult) and stream.result.text_content() == "waited 0 s"
    with pytest.raises(RuntimeError):
        [event async for event in stream]  # read once
    assert session._streams == {}


async def test_leaving_a_stream_early_cancels_the_call(tmp_path: Path) -> None:
    session = _session(tmp_path)
    stream = session.stream("Wait", {"seconds": 30, "lines": 1})
    events = stream.__aiter__()
    first = await events.__anext__()
    assert first.text == "line 0"
    await events.aclose()  # type: ignore[attr-defined]
    assert stream.result is None and session._streams == {}


@pytest.mark.slow
async def test_a_bash_command_streams_its_lines_as_they_come(tmp_path: Path) -> None:
    """The first line arrives while the command still runs (the call has no
    result yet), the second after it; the result still has both."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    session = Toolbox.load(cwd=tmp_path, plugins=["shell"]).session("bypassPermissions")
    stream = session.stream("Bash", {"command": "echo start; sleep 1; echo done"})
    seen: list[tuple[str | None, bool]] = []
    async for event in stream:
        if event.kind == "bash.line":
            seen.append((event.text, stream.result is None))
    assert seen == [("start", True), ("done", True)]
    assert stream.result is not None and stream.result.text_content().split() == ["start", "done"]
    await session.aclose()


@pytest.mark.slow
async def test_a_stream_follows_the_background_work_its_call_started(tmp_path: Path) -> None:
    """A Monitor's call returns at once; its lines come after, and the stream
    follows them until the watch ends (``background.done``)."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    session = Toolbox.load(cwd=tmp_path, plugins=["shell"]).session("bypassPermissions")
    stream = session.stream("Monitor", {"command": "echo one; sleep 0.3; echo two", "description": "ticks"})
    kinds = [(event.kind, event.text) async for event in stream]
    assert ("monitor.line", "one") in kinds and ("monitor.line", "two") in kinds
    assert kinds[-1][0] == "background.done"
    assert stream.result is not None and not stream.result.is_error
    await session.aclose()

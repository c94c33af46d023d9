"""Background calls: a task id at once, the result delivered to the host as
``background.done`` and fetchable with TaskOutput, listed by TaskList, stopped
by TaskStop; per session."""

from __future__ import annotations

import asyncio
import gc
import inspect
import re
import warnings
from typing import Any

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401
from pegboard import Session, ToolResult, hookimpl

pytestmark = pytest.mark.anyio

ON = "[background]\nenabled = true\n"


class Events:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []
        self.arrived = asyncio.Event()

    @hookimpl
    def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
        self.events.append((session.id, kind, data))
        if kind == "background.done":
            self.arrived.set()

    def done(self) -> list[dict[str, Any]]:
        return [data for _, kind, data in self.events if kind == "background.done"]


def task_id(result: ToolResult) -> str:
    match = re.search(r"in the background as (task-\d+)", result.text_content())
    assert match, result.text_content()
    return match.group(1)


async def test_background_call_returns_at_once_and_delivers_later(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    started = await session.call("Slow", {"seconds": 0.3, "label": "bg", "background": True})
    assert not started.is_error
    tid = task_id(started)
    assert "log" not in session.plugin_state("pipetest")  # returned before the tool finished
    listing = await session.call("TaskList", {})
    assert re.fullmatch(rf"{tid}\trunning\t[0-9.]+ s\ttool\tSlow \(call \w+\)", listing.text_content())
    running = await session.call("TaskOutput", {"task_id": tid})
    assert f"{tid} is still running" in running.text_content()

    await asyncio.wait_for(host.arrived.wait(), 5)
    [event] = host.done()
    assert event["id"] == tid and event["status"] == "done" and event["kind"] == "tool"
    assert isinstance(event["result"], ToolResult) and event["result"].text_content() == "slow bg done"
    assert host.events[0][0] == session.id

    fetched = await session.call("TaskOutput", {"task_id": tid})
    assert fetched.text_content() == "slow bg done" and not fetched.is_error
    assert "\tdone\t" in (await session.call("TaskList", {})).text_content()


async def test_task_output_can_wait(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST, config=ON).session("workspace")
    tid = task_id(await session.call("Slow", {"seconds": 0.2, "background": True}))
    fetched = await session.call("TaskOutput", {"task_id": tid, "wait_s": 10})
    assert fetched.text_content() == "slow slow done"


async def test_background_with_scratchpad_saves_when_done(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    tid = task_id(await session.call("Big", {"size": 3000, "background": True, "scratchpad": "bg"}))
    await asyncio.wait_for(host.arrived.wait(), 5)
    assert len(session.scratchpad["bg"]) == 3000  # uncapped by scratchpad, even in the background
    assert "Saved 3,000 characters" in (await session.call("TaskOutput", {"task_id": tid})).text_content()


async def test_failing_background_call_delivers_an_error_result(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    tid = task_id(await session.call("Boom", {"background": True}))
    await asyncio.wait_for(host.arrived.wait(), 5)
    fetched = await session.call("TaskOutput", {"task_id": tid})
    assert fetched.is_error and "RuntimeError: the disk caught fire" in fetched.text_content()
    assert host.done()[0]["result"].is_error


async def test_stop_a_background_call(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    tid = task_id(await session.call("Slow", {"seconds": 30, "background": True}))
    await asyncio.sleep(0.05)
    stopped = await session.call("TaskStop", {"task_id": tid})
    assert stopped.text_content() == f"Stopped {tid}."
    assert [(e["id"], e["status"]) for e in host.done()] == [(tid, "stopped")]
    assert "log" not in session.plugin_state("pipetest")  # the tool never got to finish
    assert (await session.call("TaskOutput", {"task_id": tid})).text_content() == f"{tid} stopped."
    again = await session.call("TaskStop", {"task_id": tid})
    assert again.is_error and "No running task" in again.text_content()


@pytest.mark.slow
async def test_stop_before_the_task_ever_ran_leaves_no_stray_coroutine(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")

    async def never() -> str:
        return "x"

    coro = never()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tid = session.tasks.start(coro, kind="test")
        assert await session.tasks.stop(tid)  # no await in between: the task never started
        gc.collect()
    # Closed, not left to be collected with a "never awaited" warning.
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert [(e["id"], e["status"]) for e in host.done()] == [(tid, "stopped")]


async def test_closing_the_session_stops_its_tasks(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    tid = task_id(await session.call("Slow", {"seconds": 30, "background": True}))
    await session.aclose()
    assert session.tasks.get(tid).status == "stopped"  # type: ignore[union-attr]
    assert host.done()[0]["status"] == "stopped"


async def test_background_keeps_the_deferred_note(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST, config=ON).session("workspace")
    started = await session.call("Hidden", {"query": "q", "background": True})
    assert "Started Hidden in the background" in started.text_content()
    assert "Note: Hidden was called without loading its schema" in started.text_content()


async def test_tasks_belong_to_their_session(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PIPETEST, config=ON)
    one, two = toolbox.session("workspace"), toolbox.session("workspace")
    tid = task_id(await one.call("Slow", {"seconds": 0.05, "background": True}))
    assert (await two.call("TaskOutput", {"task_id": tid})).is_error
    assert (await two.call("TaskStop", {"task_id": tid})).is_error
    assert (await two.call("TaskList", {})).text_content() == "No background tasks in this session."
    assert (await one.call("TaskOutput", {"task_id": tid, "wait_s": 5})).text_content() == "slow slow done"


async def test_core_taskstop_needs_no_approval_but_deny_rules_hold(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PIPETEST, config=ON)
    session = toolbox.session("default")  # default mode asks about tools that change things
    tid = task_id(await session.call("Slow", {"seconds": 30, "background": True}))
    assert (await session.call("TaskStop", {"task_id": tid})).text_content() == f"Stopped {tid}."
    denied = plugin_factory(PIPETEST, config=ON + '[permissions]\ndeny = ["TaskStop"]\n').session("default")
    tid = task_id(await denied.call("Slow", {"seconds": 30, "background": True}))
    refused = await denied.call("TaskStop", {"task_id": tid})
    assert refused.is_error and "denied by TaskStop" in refused.text_content()
    await denied.aclose()


async def test_the_cores_taskstop_takes_claude_codes_older_shell_id_for_any_task(plugin_factory: PluginFactory) -> None:
    """``shell_id`` is Claude Code's older name for ``task_id`` (models send
    it): the core's TaskStop stops any background task by it, whatever
    plugin's tool started the task; it knows nothing of the shell's tasks."""
    host = Events()
    session = plugin_factory(PIPETEST, config=ON, host=host).session("workspace")
    assert session.toolbox.tools["TaskStop"].plugin == "core"  # no shell plugin here
    tid = task_id(await session.call("Slow", {"seconds": 30, "background": True}))
    await asyncio.sleep(0.05)
    assert (await session.call("TaskStop", {"shell_id": tid})).text_content() == f"Stopped {tid}."
    neither = await session.call("TaskStop", {})
    assert neither.is_error and "Give task_id" in neither.text_content()

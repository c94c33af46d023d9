"""A session's state is its own: two sessions of one toolbox, in one process,
never see each other's working dirs, mode, loaded tools, notes, tasks,
scratchpad or plugin state."""

from __future__ import annotations

import asyncio

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401

pytestmark = pytest.mark.anyio


async def test_two_sessions_are_isolated(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PIPETEST, config="[background]\nenabled = true\n")
    one, two = toolbox.session("workspace"), toolbox.session("workspace")
    assert one.id != two.id

    # Interleave the two sessions' calls, really concurrently.
    await asyncio.gather(
        one.call("Echo", {"text": "one", "scratchpad": "pad"}),
        two.call("Echo", {"text": "two", "scratchpad": "pad"}),
        one.call("ToolSearch", {"query": "select:Hidden"}),
        one.call("Sleep", {"label": "one-sleep", "seconds": 0.01}),
        two.call("Slow", {"seconds": 0.01, "background": True}),
    )
    assert one.scratchpad == {"pad": "one"} and two.scratchpad == {"pad": "two"}
    assert one.loaded == {"Hidden"} and two.loaded == set()
    assert "Hidden" in [t.name for t in one.catalogue().tools]
    assert "Hidden" in [d.name for d in two.catalogue().deferred]
    assert [e[0] for e in one.plugin_state("pipetest")["log"]] == ["one-sleep"]
    assert one.tasks.list() == [] and len(two.tasks.list()) == 1
    await two.tasks.wait(two.tasks.list()[0].id, 5)
    assert [e[0] for e in two.plugin_state("pipetest")["log"]] == ["slow"]

    # One-time notes are per session.
    assert "Note: Hidden" in (await two.call("Hidden", {"query": "q"})).text_content()
    assert "Note: Hidden" not in (await one.call("Hidden", {"query": "q"})).text_content()  # loaded in one
    assert one.note_once("x") and two.note_once("x") and not one.note_once("x")

    # Mode and working directories.
    one.set_mode("read")
    assert one.mode == "read" and two.mode == "workspace"
    assert (await one.call("WriteFile", {"label": "w", "path": "a.txt"})).is_error
    extra = one.root / "extra"
    extra.mkdir()
    one.add_working_dir("extra")
    assert extra.resolve() in one.working_dirs and extra.resolve() not in two.working_dirs

    # Per-plugin state: a dict per plugin per session.
    one.plugin_state("other")["k"] = 1
    assert two.plugin_state("other") == {}
    assert one.data_dir != two.data_dir


async def test_session_closes_once_and_calls_close_hooks(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PIPETEST + """
from pegboard import hookimpl

@hookimpl
def pegboard_session_closed(session):
    session.toolbox.closed_ids = getattr(session.toolbox, "closed_ids", []) + [session.id]
""")
    async with toolbox.session("workspace") as session:
        pass
    await session.aclose()
    assert toolbox.closed_ids == [session.id]  # type: ignore[attr-defined]


async def test_failing_close_and_file_read_hooks_are_reported_and_the_rest_still_run(
        plugin_factory: PluginFactory, capsys: pytest.CaptureFixture[str]) -> None:
    plugin_factory.write("""
from pegboard import hookimpl

@hookimpl
def pegboard_session_closed(session):
    raise RuntimeError("cleanup broke")

@hookimpl
def pegboard_file_read(session, path, source):
    raise RuntimeError("tracking broke")
""", name="broken")
    toolbox = plugin_factory(PIPETEST + """
from pegboard import hookimpl

@hookimpl
def pegboard_session_closed(session):
    session.toolbox.closed_ids = [session.id]
""", also=("broken", "fs"))
    session = toolbox.session("workspace")
    # what the shell does after `cat a.txt`: the fs plugin's hook, through the notifying plugin's context
    toolbox.context_for("pipetest").notify("pegboard_file_read", session=session, path=session.root / "a.txt",
                                          source="Bash")
    with pytest.warns(DeprecationWarning, match="PluginContext.notify"):
        session.file_read(session.root / "a.txt", "Bash")  # the old way, for one release
    await session.aclose()
    assert toolbox.closed_ids == [session.id]  # type: ignore[attr-defined]
    err = capsys.readouterr().err
    assert "pegboard_session_closed of plugin 'broken' failed: RuntimeError: cleanup broke" in err
    assert "pegboard_file_read of plugin 'broken' failed: RuntimeError: tracking broke" in err


async def test_add_working_dir_refuses_a_non_directory(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    with pytest.raises(ValueError, match="not a directory"):
        session.add_working_dir("missing")


async def test_closed_session_runs_nothing(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    await session.aclose()
    result = await session.call("Echo", {"text": "x"})
    assert result.is_error and result.text_content() == "Echo was not run: this session is closed."
    assert session.plugin_state("pipetest").get("seen") is None


async def test_the_remembered_offer_of_a_tool_is_the_toolboxs_answer(plugin_factory: PluginFactory) -> None:
    """The pipeline keeps, per session and tool name, whether the policy
    offers the tool: it must answer as Toolbox.offered_tool does after the
    mode changes, a tool is taken out, or a child hides it."""
    toolbox = plugin_factory(PIPETEST)
    session = toolbox.session("default")
    child = session.child(hide=["Echo"])
    names = ["Echo", "WriteFile", "ToolSearch", "Nope"]

    def agree() -> None:
        for s in (session, child):
            for name in names:
                assert s._offered_tool(name) is toolbox.offered_tool(name, s), (s.mode, name)
                assert s._offered_tool(name) is toolbox.offered_tool(name, s), (s.mode, name)  # remembered

    agree()
    assert session._offered_tool("WriteFile") is not None and child._offered_tool("Echo") is None
    for mode in ("plan", "read", "none", "default"):
        session.set_mode(mode)
        child.set_mode(mode)
        agree()
    session.set_mode("plan")
    assert session._offered_tool("WriteFile") is None  # plan offers read-only tools only
    session.set_mode("default")
    toolbox.mark_broken(toolbox.tools["Echo"], "a test took it out")
    agree()
    assert session._offered_tool("Echo") is None
    result = await session.call("Echo", {"text": "a"})
    assert result.is_error

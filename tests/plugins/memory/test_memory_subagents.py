"""Sub-agents and memory: none by default, read when granted, never write,
never more than the maker holds; through ``Session.child`` and through the
subtasks plugin's Agent (``tool_access``), follow-ups included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _subtasks_host import ScriptedHost, load, project
from pegboard import Session, Tool, Toolbox, hookimpl

pytestmark = pytest.mark.anyio


async def seeded(root: Path) -> Session:
    session = Toolbox.load(cwd=root, plugins=["memory"]).session("default")
    made = await session.call("memory", {"command": "create", "path": "/memories/facts.md", "file_text": "tea\n"})
    assert not made.is_error, made.text_content()
    return session


async def test_a_child_gets_no_memory_unless_given_read_and_never_write(tmp_path: Path) -> None:
    parent = await seeded(tmp_path)
    plain = parent.child()
    assert "memory" not in plain.catalogue().names()
    denied = await plain.call("memory", {"command": "view", "path": "/memories/facts.md"})
    assert denied.is_error and "not offered" in denied.text_content()

    reader = parent.child(access={"memory": "read"})
    assert "memory" in reader.catalogue().names()
    seen = await reader.call("memory", {"command": "view", "path": "/memories/facts.md"})
    assert not seen.is_error and "     1\ttea" in seen.text_content()
    for args in ({"command": "create", "path": "/memories/x.md", "file_text": "x"},
                 {"command": "str_replace", "path": "/memories/facts.md", "old_str": "tea", "new_str": "coffee"},
                 {"command": "insert", "path": "/memories/facts.md", "insert_line": 0, "insert_text": "x"},
                 {"command": "delete", "path": "/memories/facts.md"},
                 {"command": "rename", "old_path": "/memories/facts.md", "new_path": "/memories/y.md"}):
        refused = await reader.call("memory", args)
        assert refused.is_error, args
        assert "may read memories but not change them" in refused.text_content()
    assert "     1\ttea" in (await parent.call("memory", {"command": "view", "path": "/memories/facts.md"})
                            ).text_content()

    # "full" asks more than the tool lets a sub-agent have: it gets read.
    assert parent.child(access={"memory": "full"}).access_to(parent.toolbox.tools["memory"]) == "read"


async def test_never_more_than_the_maker_holds(tmp_path: Path) -> None:
    parent = await seeded(tmp_path)
    memory = parent.toolbox.tools["memory"]
    assert parent.access_to(memory) == "full"
    without = parent.child()
    grandchild = without.child(access={"memory": "read"})  # a worker given no memory cannot give any
    assert grandchild.access_to(memory) == "none" and "memory" not in grandchild.catalogue().names()
    reader = parent.child(access={"memory": "read"})
    assert reader.child().access_to(memory) == "none"  # not passed on unless given again
    assert reader.child(access={"memory": "read"}).access_to(memory) == "read"
    hidden = parent.child(access={"memory": "read"}, hide=["memory"])
    assert "memory" not in hidden.catalogue().names()  # hiding still wins


async def test_an_access_grant_is_only_for_tools_that_take_one(tmp_path: Path) -> None:
    parent = await seeded(tmp_path)
    with pytest.raises(ValueError, match="takes no access grant"):
        parent.child(access={"ScratchpadRead": "read"})
    with pytest.raises(ValueError, match="is not one of none, read, full"):
        parent.child(access={"memory": "write"})  # type: ignore[dict-item]
    parent.child(access={"NoSuchTool": "read"})  # not loaded here: nothing to grant, nothing offered


class Notes:
    """A third party's tool that sub-agents get only when given, enforcing "read" itself."""

    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        async def notes(args: dict[str, Any], ctx: Any) -> str:
            if args.get("write") and ctx.access != "full":
                return "refused: read only"
            return f"ok ({ctx.access})"

        register(Tool(name="Notes", handler=notes, input_schema={"type": "object"}, permission="read",
                      subagents="full"))


async def test_the_mechanism_is_general(tmp_path: Path) -> None:
    session = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"notes": Notes()}).session("bypassPermissions")
    notes = session.toolbox.tools["Notes"]
    assert (await session.call("Notes", {"write": True})).text_content() == "ok (full)"
    assert "Notes" not in session.child().catalogue().names()
    full = session.child(access={"Notes": "full"})
    assert (await full.call("Notes", {"write": True})).text_content() == "ok (full)"
    reader = session.child(access={"Notes": "read"})
    assert (await reader.call("Notes", {"write": True})).text_content() == "refused: read only"
    assert reader.child(access={"Notes": "full"}).access_to(notes) == "read"


# --- through the subtasks plugin's Agent ------------------------------------------------


async def try_memory(run: Any) -> str:
    session = run.session
    offered = "memory" in {t.name for t in session.offered()}
    if not offered:
        return "no memory here"
    seen = await session.call("memory", {"command": "view", "path": "/memories/facts.md"})
    wrote = await session.call("memory", {"command": "create", "path": "/memories/child.md", "file_text": "x"})
    return f"view: {seen.text_content()!r} | create: {wrote.text_content()!r}"


async def test_agent_gives_memory_only_through_tool_access(tmp_path: Path) -> None:
    root = project(tmp_path)
    await seeded(root)
    host = ScriptedHost({"try": try_memory})
    session = load(root, host, plugins=("fs", "subtasks", "memory")).session("bypassPermissions")
    plain = await session.call("Agent", {"description": "d", "prompt": "try: x", "run_in_background": False})
    assert plain.text_content().splitlines()[1] == "no memory here"
    given = await session.call("Agent", {"description": "d", "prompt": "try: x", "run_in_background": False,
                                         "tool_access": [{"tool": "memory", "access": "read"}]})
    text = given.text_content()
    assert "1\\ttea" in text and "may read memories but not change them" in text, text
    # A follow-up runs under the terms of the spawn: still read, still no write.
    agent = text.splitlines()[0]
    started = await session.call("SendMessage", {"to": agent, "message": "try: again", "summary": "again"})
    task_id = started.text_content().split(" as ", 1)[1].split(";", 1)[0]
    again = (await session.call("TaskOutput", {"task_id": task_id, "wait_s": 5})).text_content()
    assert "1\\ttea" in again and "not change them" in again, again
    assert "child.md" not in (await session.call("memory", {"command": "view", "path": "/memories"})).text_content()
    wrong = await session.call("Agent", {"description": "d", "prompt": "try: x", "run_in_background": False,
                                         "tool_access": [{"tool": "Read", "access": "read"}]})
    assert wrong.is_error and "Read takes no access grant" in wrong.text_content()

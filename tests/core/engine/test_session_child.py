"""Child sessions (``Session.child``): a sub-agent's session is never wider
than its parent's, in policy, tools, grants or working directories."""

from __future__ import annotations

from typing import Any

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import Answer, Decision, PermissionRequest, Session, Toolbox, hookimpl

pytestmark = pytest.mark.anyio

FAMILY = """
from pydantic import BaseModel
from pegboard import Tool, ToolNamespace, Vote, hookimpl

class In(BaseModel):
    text: str = ""

async def echo(args, ctx):
    return f"{ctx.tool.name}:{args.text}"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Look", handler=echo, input_model=In, read_only=True, permission="read"))
    register(Tool(name="Change", handler=echo, input_model=In, permission="workspace"))
    register(Tool(name="ChangeMore", handler=echo, input_model=In, permission="workspace",
                  metadata={"rule_names": ("Change",)}))
    register(Tool(name="Helper", handler=echo, input_model=In, read_only=True, permission="read",
                  metadata={"requires": "Change"}))
    register(Tool(name="Private", handler=echo, input_model=In, read_only=True, permission="read",
                  subagents=False))
    register(Tool(name="mcp__srv__one", handler=echo, input_model=In, read_only=True, permission="read"))
    register(Tool(name="mcp__srv__two", handler=echo, input_model=In, read_only=True, permission="read"))


@hookimpl
def pegboard_tool_namespaces():
    # its mcp__srv__* tools form a group, as the mcp plugin declares for its servers
    return [ToolNamespace("mcp", label="MCP server", unknown_hint="is it approved and listed? `pegboard mcp list`")]

@hookimpl
def pegboard_permission(request):
    if request.tool.name == "Change":
        return Vote.ask("Change changes things")
    return None
"""


def names(session: Session) -> set[str]:
    return {t.name for t in session.offered()}


@pytest.fixture
def toolbox(plugin_factory: PluginFactory) -> Toolbox:
    return plugin_factory(FAMILY, name="family")


async def test_policy_is_clamped_to_the_parents(toolbox: Toolbox) -> None:
    parent = toolbox.session("default")
    assert parent.child(mode="bypassPermissions").mode == "default"
    assert parent.child(mode="plan").mode == "plan"
    assert parent.child().mode == "default"
    # A grandchild is clamped to its own parent, not the top session.
    assert parent.child(mode="plan").child(mode="acceptEdits").mode == "plan"
    with pytest.raises(ValueError):
        parent.child(mode="nonsense")


async def test_hidden_tools_are_neither_offered_nor_run(toolbox: Toolbox) -> None:
    parent = toolbox.session("bypassPermissions")
    child = parent.child(hide=["Change", "mcp__srv"], label="worker")
    offered = names(child)
    # A name hides what a deny rule of that name covers, and what goes with it.
    assert {"Change", "ChangeMore", "Helper", "mcp__srv__one", "mcp__srv__two"}.isdisjoint(offered)
    assert "Look" in offered and "Change" in names(parent)
    result = await child.call("ChangeMore", {"text": "x"})
    assert result.is_error and "not offered to this sub-agent (main > worker)" in result.text_content()
    request = PermissionRequest(tool=toolbox.tools["mcp__srv__one"], input={}, session=child, policy=child.policy)
    decision = toolbox.permissions.evaluate(request)
    assert decision.decision == "deny" and "sub-agent" in decision.source
    # Narrowing only adds up: a grandchild cannot get back what its parent lost.
    grandchild = child.child(hide=["Look"])
    assert {"Look", "Change", "mcp__srv__one"}.isdisjoint(names(grandchild))
    assert (await parent.call("Change", {"text": "y"})).text_content() == "Change:y"


async def test_tools_not_for_subagents_and_allow_lists(toolbox: Toolbox) -> None:
    parent = toolbox.session("bypassPermissions")
    assert "Private" in names(parent)
    child = parent.child()
    assert "Private" not in names(child)
    assert (await child.call("Private", {})).is_error
    only = parent.child(only=["Look", "Change"])
    offered = names(only)
    assert {"Look", "Change"} <= offered and {"ChangeMore", "mcp__srv__one"}.isdisjoint(offered)
    assert {"ScratchpadRead", "TaskOutput"} <= offered  # the core's own tools stay
    narrower = only.child(only=["Look", "mcp__srv__one"])
    assert "Look" in names(narrower) and {"Change", "mcp__srv__one"}.isdisjoint(names(narrower))


async def test_grants_deny_live_allow_copied(toolbox: Toolbox) -> None:
    parent = toolbox.session("default")
    parent.grant("Change", "allow")
    child = parent.child()
    assert (await child.call("Change", {"text": "a"})).text_content() == "Change:a"  # copied at birth
    later = parent.child()
    parent.grant("Look", "deny")                       # a deny made after the children were made
    assert (await child.call("Look", {})).is_error and (await later.call("Look", {})).is_error
    fresh = toolbox.session("default").child()
    toolbox_parent = fresh.parent
    assert toolbox_parent is not None
    toolbox_parent.grant("Change", "allow")           # an allow made after: not the child's
    assert (await fresh.call("Change", {})).is_error


async def test_working_dirs_only_narrow(toolbox: Toolbox, tmp_path: Any) -> None:
    parent = toolbox.session()
    inner = parent.root / "sub"
    inner.mkdir()
    child = parent.child(working_dirs=["sub"])
    assert child.root == inner.resolve() and child.working_dirs == (inner.resolve(),)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(ValueError, match="not within"):
        parent.child(working_dirs=[outside])


async def test_asks_reach_the_same_host_with_the_chain(plugin_factory: PluginFactory) -> None:
    asked: list[tuple[str, tuple[str, ...]]] = []

    class Host:
        @hookimpl
        def pegboard_ask(self, request: PermissionRequest, decision: Decision) -> Answer:
            asked.append((request.tool.name, request.session.chain))
            return Answer(allow=True)

    toolbox = plugin_factory(FAMILY, name="family", host=Host())
    parent = toolbox.session("default")
    child = parent.child(label="reviewer")
    grandchild = child.child(label="checker")
    assert grandchild.person_lock is parent.person_lock and grandchild.ask_lock is not parent.ask_lock
    assert (await grandchild.call("Change", {"text": "z"})).text_content() == "Change:z"
    assert asked == [("Change", ("main", "reviewer", "checker"))]


async def test_an_unanswered_ask_is_an_event(plugin_factory: PluginFactory) -> None:
    events: list[tuple[str, str, dict[str, Any]]] = []

    class Listener:
        @hookimpl
        def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
            events.append((session.label or "", kind, data))

    toolbox = plugin_factory(FAMILY, name="family", host=Listener())
    child = toolbox.session("default").child(label="bg")
    result = await child.call("Change", {"text": "q"}, call_id="c-7")
    assert result.is_error and "no one is there to ask" in result.text_content()
    unanswered = [e for e in events if e[1] == "permission.unanswered"]
    assert len(unanswered) == 1
    label, _, data = unanswered[0]
    assert label == "bg" and data["tool"] == "Change" and data["call_id"] == "c-7"
    assert "no one is there to ask" in data["reason"]


async def test_a_child_with_an_id_is_durable_under_its_parent(toolbox: Toolbox) -> None:
    parent = toolbox.session("default", session_id="top-1")
    child = parent.child(session_id="kid-1", label="kid")
    assert child.durable and child.parent_id == "top-1" and not child.resumed
    child.scratchpad["notes"] = "kept"
    again = toolbox.session("default", session_id="top-1").child(session_id="kid-1")
    assert again.resumed and again.scratchpad["notes"] == "kept"
    assert parent.child().durable is False
    named = toolbox.session("default").child(session_id="kid-x")  # a parent that does not last
    assert named.id == "kid-x" and not named.durable


async def test_deleting_a_session_deletes_the_sessions_made_from_it(toolbox: Toolbox) -> None:
    top = toolbox.session(session_id="top-2")
    kid = top.child(session_id="kid-2")
    kid.child(session_id="grandkid-2").scratchpad["x"] = "y"
    other = toolbox.session(session_id="other-2")
    other.scratchpad["keep"] = "me"
    deleted, problems = toolbox.delete_sessions(["top-2"])
    assert sorted(deleted) == ["grandkid-2", "kid-2", "top-2"] and problems == []
    assert not toolbox.session(session_id="grandkid-2").resumed
    assert toolbox.session(session_id="other-2").resumed


async def test_a_session_deletes_only_its_own_children(toolbox: Toolbox) -> None:
    top = toolbox.session(session_id="top-3")
    top.child(session_id="kid-3").child(session_id="grandkid-3")
    stranger = toolbox.session(session_id="stranger-3")
    assert not stranger.delete_child("kid-3")            # not its child
    assert not top.delete_child("grandkid-3")            # a grandchild is its child's to delete
    assert top.delete_child("kid-3")
    assert not toolbox.session(session_id="grandkid-3").resumed


async def test_a_childs_copies_narrow_like_their_originals_and_never_widen(tmp_path: Any) -> None:
    """``Session.child(copies={copy: original})``: a deny or ask rule written
    for the original also holds for the same path in the copy, down a chain
    of copies; an allow rule does not follow the path there."""
    from pathlib import Path

    root = (tmp_path / "proj").resolve()
    outer = root / ".worktrees" / "a"
    inner = outer / ".worktrees" / "b"
    for folder in (root / "secrets", root / "docs", inner / "secrets", inner / "docs"):
        folder.mkdir(parents=True)
    config = tmp_path / "rules.toml"
    config.write_text('[permissions]\ndeny = ["Read(./secrets/**)"]\nask = ["Write(./docs/ask.md)"]\n'
                      'allow = ["Write(./docs/**)"]\n')
    toolbox = Toolbox.load(cwd=root, plugins=["fs"], config=config)
    parent = toolbox.session("default")
    first = parent.child(working_dirs=[outer], copies={outer: root})
    second = first.child(working_dirs=[inner], copies={inner: outer})
    assert second.originals(str(inner / "x")) == (str(outer / "x"), str(root / "x"))
    assert second.copies_of(str(root / "secrets")) == (str(outer / "secrets"), str(inner / "secrets"))
    assert parent.originals(str(root / "x")) == () and first.originals(str(tmp_path / "x")) == ()

    async def decided(session: Session, tool: str, path: Path) -> str:
        args: dict[str, Any] = {"file_path": str(path)} if tool == "Read" else {"file_path": str(path), "content": ""}
        return (await session.decide(tool, args)).decision

    assert await decided(parent, "Read", root / "secrets" / "k") == "deny"
    assert await decided(second, "Read", inner / "secrets" / "k") == "deny"
    assert await decided(second, "Write", inner / "docs" / "ask.md") == "ask"
    assert await decided(parent, "Write", root / "docs" / "new.md") == "allow"
    # the same write in the copy is not allowed by the original's allow rule: default mode asks
    assert await decided(second, "Write", inner / "docs" / "new.md") == "ask"
    # and a child made without copies does not narrow (the control)
    plain = parent.child(working_dirs=[inner])
    assert await decided(plain, "Read", inner / "secrets" / "k") == "allow"


async def test_a_parents_deny_grant_holds_in_a_child_with_no_grants_of_its_own(toolbox: Toolbox) -> None:
    # the engine skips its rule lookups for a call no rule and no grant names:
    # a grant only the parent holds must still be seen from the child
    parent = toolbox.session("bypassPermissions")
    child = parent.child()
    assert not (await child.call("Look", {})).is_error
    parent.grant("Look", "deny")
    assert (await child.call("Look", {})).is_error
    assert (await child.child().call("Look", {})).is_error

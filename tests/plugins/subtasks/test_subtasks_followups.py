"""Follow-ups, listing and deleting children, and worktree isolation, in one
process (tests/plugins/subtasks/test_subtasks_runners.py follows up from a second process)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from _subtasks_host import ScriptedHost, load, project

pytestmark = pytest.mark.anyio


async def remember(run: Any) -> str:
    run.messages.append({"role": "user", "content": run.prompt})
    run.messages.append({"role": "assistant", "content": f"heard {len(run.messages) // 2}"})
    return f"{run.session.mode}; {len(run.messages) // 2} prompt(s) so far"


async def test_a_follow_up_keeps_the_conversation_and_the_spawns_terms(tmp_path: Path) -> None:
    root = project(tmp_path)
    host = ScriptedHost({"remember": remember, "again": remember})
    session = load(root, host).session("acceptEdits")
    first = await session.call("Agent", {"description": "mem", "prompt": "remember: a", "mode": "plan",
                                         "run_in_background": False, "name": "memo"})
    child = first.text_content().splitlines()[0]
    assert first.text_content().endswith("plan; 1 prompt(s) so far")
    session.set_mode("bypassPermissions")  # the caller widens; the child does not
    second = await session.call("SendMessage", {"to": "memo", "message": "again: b", "summary": "b"})
    assert "in the background as" in second.text_content()  # like Agent, when someone hears the reply
    task_id = second.text_content().split(" as ")[1].split(";")[0]
    reply = await session.call("TaskOutput", {"task_id": task_id, "wait_s": 5})
    assert reply.text_content().splitlines() == [child, "plan; 2 prompt(s) so far"]
    assert host.runs[1].follow_up and host.runs[1].messages[0] == {"role": "user", "content": "remember: a"}
    listing = (await session.call("ListAgents", {})).text_content()
    assert listing.startswith(f"{child}\tmemo: mem\tgeneral-purpose\tidle\tturns=2\t")
    structured = (await session.call("ListAgents", {})).structured_content
    assert structured is not None and structured["agents"][0]["mode"] == "plan"


async def test_a_second_follow_up_is_refused_while_one_runs(tmp_path: Path) -> None:
    root = project(tmp_path)
    gate = asyncio.Event()

    async def slow(run: Any) -> str:
        await gate.wait()
        return "finally"

    async def quick(run: Any) -> str:
        return "first"

    host = ScriptedHost({"slow": slow, "quick": quick})
    session = load(root, host).session("default")
    child = (await session.call("Agent", {"description": "x", "prompt": "quick: go", "run_in_background": False})
             ).text_content().splitlines()[0]
    started = await session.call("SendMessage", {"to": child, "message": "slow: wait"})
    assert "in the background as" in started.text_content()
    refused = await session.call("SendMessage", {"to": child, "message": "quick: now"})
    assert refused.is_error and "is busy with another prompt" in refused.text_content()
    gate.set()
    task_id = started.text_content().split(" as ")[1].split(";")[0]
    assert (await session.call("TaskOutput", {"task_id": task_id, "wait_s": 5})).text_content().endswith("finally")
    assert not (await session.call("SendMessage", {"to": child, "message": "quick: now"})).is_error


async def test_children_are_their_sessions_own(tmp_path: Path) -> None:
    root = project(tmp_path)
    host = ScriptedHost({"remember": remember})
    toolbox = load(root, host)
    mine, theirs = toolbox.session("default"), toolbox.session("default")
    child = (await mine.call("Agent", {"description": "x", "prompt": "remember: a", "run_in_background": False})
             ).text_content().splitlines()[0]
    assert "started no sub-agents" in (await theirs.call("ListAgents", {})).text_content()
    for tool, args in (("SendMessage", {"to": child, "message": "remember: b"}), ("DeleteAgent", {"agent": child})):
        result = await theirs.call(tool, args)
        assert result.is_error and "among this session's sub-agents" in result.text_content()
    # A child lists its own children, not its siblings.
    seen: list[str] = []

    async def look(run: Any) -> str:
        seen.append((await run.session.call("ListAgents", {})).text_content())
        return "looked"

    host.scripts["look"] = look
    await mine.call("Agent", {"description": "y", "prompt": "look: around", "run_in_background": False})
    assert seen == ["This session has started no sub-agents."]


async def test_delete_discards_the_child_and_what_it_started(tmp_path: Path) -> None:
    root = project(tmp_path)

    async def parent_of_one(run: Any) -> str:
        await run.session.call("Agent", {"description": "inner", "prompt": "remember: x", "run_in_background": False})
        (Path(run.session.root) / "kept.txt").write_text("stays")
        return "made one"

    host = ScriptedHost({"outer": parent_of_one, "remember": remember})
    session = load(root, host).session("default")
    child = (await session.call("Agent", {"description": "x", "prompt": "outer: go", "run_in_background": False})
             ).text_content().splitlines()[0]
    deleted = await session.call("DeleteAgent", {"agent": child})
    assert deleted.text_content().startswith(f"Deleted {child}")
    assert "started no sub-agents" in (await session.call("ListAgents", {})).text_content()
    assert (root / "kept.txt").read_text() == "stays"
    assert (await session.call("SendMessage", {"to": child, "message": "remember: y"})).is_error


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


async def test_worktree_isolation(tmp_path: Path) -> None:
    root = project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print('v1')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "one")
    hooks = root / ".git" / "hooks" / "post-checkout"
    hooks.write_text("#!/bin/sh\ntouch \"$(git rev-parse --show-toplevel)/HOOK-RAN\"\n")
    hooks.chmod(0o755)
    seen: dict[str, Any] = {}

    async def change(run: Any) -> str:
        seen["root"], seen["dirs"] = run.session.root, run.session.working_dirs
        target = Path(run.session.root) / "app.py"
        seen["read"] = (await run.session.call("Read", {"file_path": str(target)})).text_content()
        result = await run.session.call("Edit", {"file_path": str(target), "old_string": "v1", "new_string": "v2"})
        outside = await run.session.call("Write", {"file_path": str(root / "app.py"), "content": "clobbered"})
        return f"{result.text_content()} / outside: {outside.text_content()}"

    async def nothing(run: Any) -> str:
        return "looked only"

    host = ScriptedHost({"change": change, "nothing": nothing})
    session = load(root, host).session("acceptEdits")
    result = (await session.call("Agent", {"description": "fix", "prompt": "change: v2", "isolation": "worktree",
                                           "run_in_background": False})).text_content()
    child = result.splitlines()[0]
    tree = root / ".worktrees" / child
    assert seen["root"] == tree and seen["dirs"] == (tree,)
    assert (tree / "app.py").read_text() == "print('v2')\n"
    assert (root / "app.py").read_text() == "print('v1')\n"   # the parent's checkout is untouched
    assert "outside:" in result and "Permission denied" in result  # outside its worktree it may not write
    assert f"Its worktree {tree} (branch {child}) is kept: it has uncommitted changes" in result
    assert not (root / "HOOK-RAN").exists() and not (tree / "HOOK-RAN").exists()
    assert git(root, "status", "--porcelain") == ""            # the worktrees folder ignores itself
    # An agent that changed nothing leaves no worktree behind.
    clean = (await session.call("Agent", {"description": "look", "prompt": "nothing: x", "isolation": "worktree",
                                          "run_in_background": False})).text_content()
    other = clean.splitlines()[0]
    assert not (root / ".worktrees" / other).exists() and "kept" not in clean
    assert other not in git(root, "branch")
    # Outside a repository it is refused, with the reason.
    (tmp_path / "plain").mkdir()
    plain = project(tmp_path / "plain")
    refused = await load(plain, host).session("default").call(
        "Agent", {"description": "x", "prompt": "nothing: x", "isolation": "worktree", "run_in_background": False})
    assert refused.is_error and "needs a git repository" in refused.text_content()


@pytest.mark.slow
async def test_children_of_a_durable_session_last(tmp_path: Path, store_url: str) -> None:
    from pegboard._services.store import dispose_all

    root = project(tmp_path)
    host = ScriptedHost({"remember": remember, "again": remember})
    session = load(root, host).session("acceptEdits", session_id="parent-1")
    first = await session.call("Agent", {"description": "mem", "prompt": "remember: a", "mode": "default",
                                         "run_in_background": False, "name": "memo"})
    child = first.text_content().splitlines()[0]
    host.runs[0].session.scratchpad["found"] = "the answer"
    await session.aclose()
    dispose_all()  # as if the process had ended
    again = ScriptedHost({"again": remember}, listens=False)
    resumed = load(root, again).session("bypassPermissions", session_id="parent-1")
    assert resumed.resumed
    listing = (await resumed.call("ListAgents", {})).text_content()
    assert listing.startswith(f"{child}\tmemo: mem\tgeneral-purpose\tidle\tturns=1\t")
    reply = await resumed.call("SendMessage", {"to": "memo", "message": "again: b"})
    assert reply.text_content().splitlines()[:2] == [child, "default; 2 prompt(s) so far"], reply.text_content()
    run = again.runs[0]
    assert run.messages[:2] == [{"role": "user", "content": "remember: a"}, {"role": "assistant", "content": "heard 0"}]
    assert run.prompt.startswith("(This conversation continues in a new session")
    assert run.session.scratchpad["found"] == "the answer" and run.session.parent_id == "parent-1"
    spare = (await resumed.call("Agent", {"description": "spare", "prompt": "again: x", "run_in_background": False})
             ).text_content().splitlines()[0]
    assert (await resumed.call("DeleteAgent", {"agent": spare})).text_content().startswith(f"Deleted {spare}")
    assert not load(root).session(session_id=spare).resumed  # its durable session went with it
    other = load(root, again).session("default", session_id="someone-else")
    assert (await other.call("SendMessage", {"to": child, "message": "again: c"})).is_error
    # Deleting the parent session deletes its children and their conversations.
    await resumed.aclose()
    deleted, _ = load(root).delete_sessions(["parent-1"])
    assert sorted(deleted) == sorted(["parent-1", child])
    fresh = load(root, again).session("default", session_id="parent-1")
    assert "started no sub-agents" in (await fresh.call("ListAgents", {})).text_content()


async def test_the_parents_anchored_deny_rules_hold_in_the_childs_worktree(tmp_path: Path) -> None:
    """``Read(./secrets/**)`` is anchored at the project root; in a worktree
    the same files lie under .worktrees/<id>/. The rules written for the
    original hold for the copy, through the file tools, a command that names
    the file, and the box (hidden there too); an allow rule does not follow."""
    from pegboard.plugins.shell._sandbox import backend_for

    project_root = tmp_path / "project"
    root = project(tmp_path, '[permissions]\ndeny = ["Read(./secrets/**)", "Edit(/config/prod.toml)", '
                             f'"Read(/{project_root}/keys/**)"]\n',
                   user='[plugins.shell]\nsandbox = "bubblewrap"\n')
    for name, text in (("secrets/key.txt", "S3CRET\n"), ("config/prod.toml", "x = 1\n"), ("keys/k", "K3Y\n"),
                       ("app.py", "print(1)\n")):
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    seen: dict[str, Any] = {}
    boxed = backend_for("bubblewrap") == "bubblewrap"

    async def look(run: Any) -> str:
        tree = Path(run.session.root)
        seen["tree"], seen["copied"] = tree, (tree / "secrets" / "key.txt").read_text()
        for name in ("secrets/key.txt", "keys/k", "app.py"):
            seen[name] = await run.session.call("Read", {"file_path": str(tree / name)})
        await run.session.call("Read", {"file_path": str(tree / "config" / "prod.toml")})
        seen["edit"] = await run.session.call("Edit", {"file_path": str(tree / "config" / "prod.toml"),
                                                       "old_string": "1", "new_string": "2"})
        seen["cat"] = await run.session.call("Bash", {"command": "cat secrets/key.txt"})
        seen["prod"] = (tree / "config" / "prod.toml").read_text()
        if boxed:
            seen["boxed"] = await run.session.call(
                "Bash", {"command": "python3 -c \"print(open('secrets/key.txt').read()); print('BOX-RAN')\""})
        return "looked"

    host = ScriptedHost({"look": look})
    session = load(root, host, plugins=("fs", "shell", "subtasks")).session("acceptEdits")
    await session.call("Agent", {"description": "x", "prompt": "look: x", "isolation": "worktree",
                                 "run_in_background": False})
    tree = seen["tree"]
    assert tree.parent == root / ".worktrees" and seen["copied"] == "S3CRET\n"  # the copy is there to read
    for name, rule in (("secrets/key.txt", "Read(./secrets/**)"), ("keys/k", f"Read(/{project_root}/keys/**)")):
        result = seen[name]
        assert result.is_error and rule in result.text_content() and "S3CRET" not in result.text_content(), name
    assert not seen["app.py"].is_error and "print(1)" in seen["app.py"].text_content()
    assert seen["edit"].is_error and "Edit(/config/prod.toml)" in seen["edit"].text_content()
    assert seen["prod"] == "x = 1\n"
    assert seen["cat"].is_error and "S3CRET" not in seen["cat"].text_content()
    if boxed:
        text = seen["boxed"].text_content()
        assert "S3CRET" not in text and "BOX-RAN" not in text and ("No such file" in text or "denied" in text), text

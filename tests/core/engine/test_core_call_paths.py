"""One Read, one Bash permission decision and one Agent call, followed through
the core: no two core modules call back and forth (A calls B and B calls A)
on any of them. Run with ``-s`` to see the files each passes through (what
docs/architecture.md lists)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _call_paths import CallPath, trace
from _subtasks_host import ScriptedHost, load, project
from pegboard import Toolbox

pytestmark = pytest.mark.anyio


async def read_path(tmp_path: Path) -> CallPath:
    root = project(tmp_path)
    (root / "a.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "b.txt").write_text("three\nfour\n", encoding="utf-8")
    session = Toolbox.load(cwd=root, plugins=["fs"]).session("default")
    warm = await session.call("Read", {"file_path": str(root / "a.txt")})  # imports and caches: not traced
    assert not warm.is_error, warm.text_content()
    results: list[Any] = []

    async def work() -> None:
        results.append(await session.call("Read", {"file_path": str(root / "b.txt")}))

    path = await trace(work)
    assert "three" in results[0].text_content()
    return path


async def bash_decision_path(tmp_path: Path) -> CallPath:
    root = project(tmp_path)
    session = Toolbox.load(cwd=root, plugins=["shell"]).session("default")
    assert (await session.decide("Bash", {"command": "ls -la"})).decision == "allow"
    decisions: list[Any] = []

    async def work() -> None:
        decisions.append(await session.decide("Bash", {"command": "git status --short"}))

    path = await trace(work)
    assert decisions[0].decision == "allow", decisions[0]
    return path


async def agent_path(tmp_path: Path) -> CallPath:
    root = project(tmp_path)
    (root / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")

    async def look(run: Any) -> str:
        result = await run.session.call("Read", {"file_path": str(Path(run.session.root) / "notes.txt")})
        return "found: " + result.text_content()

    host = ScriptedHost({"look": look})
    session = load(root, host).session("default")
    spawn = {"description": "look", "prompt": "look: read notes.txt", "run_in_background": False}
    warm = await session.call("Agent", spawn)
    assert not warm.is_error, warm.text_content()
    results: list[Any] = []

    async def work() -> None:
        results.append(await session.call("Agent", spawn))

    path = await trace(work)
    assert "the answer is 42" in results[0].text_content(), results[0].text_content()
    return path


PATHS = {"a Read": read_path, "a Bash decision": bash_decision_path, "an Agent call": agent_path}


@pytest.mark.parametrize("name", sorted(PATHS))
async def test_no_two_core_modules_call_back_and_forth(name: str, tmp_path: Path) -> None:
    path = await PATHS[name](tmp_path)
    print("\n" + path.describe(name))
    assert path.edges, "nothing was traced"
    assert path.back_and_forth == [], path.describe(name)

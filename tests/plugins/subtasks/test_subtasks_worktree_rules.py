"""A sub-agent's worktree holds the parent's anchored deny rules when the
parent works in a sub-folder of its repository (issue 29, "Promises no test
holds yet"): the worktree is a copy of the whole repository, so the rules
are mapped from the repository's top, not from the parent's root."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from _subtasks_host import ScriptedHost, load

pytestmark = pytest.mark.anyio


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


async def test_anchored_deny_rules_hold_in_the_worktree_when_the_parent_works_in_a_sub_folder(
        tmp_path: Path) -> None:
    top = (tmp_path / "repo").resolve()
    root = top / "app"  # the parent's project root: a sub-folder of the repository
    for name, text in (("app/secrets/key.txt", "S3CRET\n"), ("app/config/prod.toml", "x = 1\n"),
                       ("app/main.py", "print(1)\n"), ("README", "top\n")):
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)
    (root / ".pegboard").mkdir()
    (root / ".pegboard" / "config.toml").write_text(
        '[permissions]\ndeny = ["Read(./secrets/**)", "Edit(/config/prod.toml)"]\n')
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "one")
    seen: dict[str, Any] = {}

    async def look(run: Any) -> str:
        work = Path(run.session.root)
        seen["work"], seen["copied"] = work, (work / "secrets" / "key.txt").read_text()
        seen["key"] = await run.session.call("Read", {"file_path": str(work / "secrets" / "key.txt")})
        seen["main"] = await run.session.call("Read", {"file_path": str(work / "main.py")})
        await run.session.call("Read", {"file_path": str(work / "config" / "prod.toml")})
        seen["edit"] = await run.session.call("Edit", {"file_path": str(work / "config" / "prod.toml"),
                                                       "old_string": "1", "new_string": "2"})
        seen["prod"] = (work / "config" / "prod.toml").read_text()
        return "looked"

    session = load(root, ScriptedHost({"look": look})).session("acceptEdits")
    try:
        await session.call("Agent", {"description": "x", "prompt": "look: x", "isolation": "worktree",
                                     "run_in_background": False})
    finally:
        await session.aclose()
    work = seen["work"]
    # the child works in the same sub-folder of its own copy of the repository
    assert work.parent.parent == root / ".worktrees" and work.name == "app", work
    assert seen["copied"] == "S3CRET\n"  # the copy is there to read
    key = seen["key"]
    assert key.is_error and "Read(./secrets/**)" in key.text_content() and "S3CRET" not in key.text_content(), \
        key.text_content()
    assert not seen["main"].is_error and "print(1)" in seen["main"].text_content()
    assert seen["edit"].is_error and "Edit(/config/prod.toml)" in seen["edit"].text_content()
    assert seen["prod"] == "x = 1\n"

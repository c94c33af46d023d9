"""EnterWorktree and ExitWorktree on a real repository."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox, hookimpl
from pegboard._api.decisions import Answer

pytestmark = pytest.mark.anyio



class Yes:
    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer(allow=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "f.txt").write_text("base\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
async def session(repo: Path, tmp_path: Path) -> AsyncIterator[Any]:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    tb = Toolbox.load(cwd=repo, plugins=["shell"], config=cfg, host=Yes())
    s = tb.session(mode="default")
    yield s
    await s.aclose()


async def sh(s: Any, command: str) -> str:
    return (await s.call("Bash", {"command": command})).text_content().strip()


async def test_enter_moves_only_the_shell(session: Any, repo: Path) -> None:
    r = await session.call("EnterWorktree", {"name": "feature/one"})
    assert not r.is_error, r.text_content()
    wt = repo / ".worktrees" / "feature" / "one"
    assert await sh(session, "pwd") == str(wt)
    assert await sh(session, "git branch --show-current") == "worktree-feature/one"
    assert session.working_dirs == (repo,)
    # The main checkout does not see the worktree folder as untracked.
    assert git(repo, "status", "--porcelain") == ""
    r = await session.call("ExitWorktree", {"action": "keep"})
    assert not r.is_error
    assert await sh(session, "pwd") == str(repo)
    assert wt.is_dir()


async def test_remove_refuses_uncommitted_work(session: Any, repo: Path) -> None:
    await session.call("EnterWorktree", {"name": "w1"})
    wt = repo / ".worktrees" / "w1"
    (wt / "new.txt").write_text("work\n")
    r = await session.call("ExitWorktree", {"action": "remove"})
    assert r.is_error and "uncommitted" in r.text_content() and "discard_changes" in r.text_content()
    assert wt.exists()
    r = await session.call("ExitWorktree", {"action": "remove", "discard_changes": True})
    assert not r.is_error, r.text_content()
    assert not wt.exists()
    assert "worktree-w1" not in git(repo, "branch", "--list")
    assert await sh(session, "pwd") == str(repo)


async def test_remove_refuses_unmerged_commits(session: Any, repo: Path) -> None:
    await session.call("EnterWorktree", {"name": "w2"})
    wt = repo / ".worktrees" / "w2"
    (wt / "g.txt").write_text("g\n")
    git(wt, "add", ".")
    git(wt, "commit", "-qm", "wip")
    r = await session.call("ExitWorktree", {"action": "remove"})
    assert r.is_error and "commits" in r.text_content()
    assert wt.exists()


async def test_clean_worktree_is_removed(session: Any, repo: Path) -> None:
    await session.call("EnterWorktree", {"name": "w3"})
    r = await session.call("ExitWorktree", {"action": "remove"})
    assert not r.is_error, r.text_content()
    assert not (repo / ".worktrees" / "w3").exists()


async def test_enter_existing_worktree_by_path(session: Any, repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    r = await session.call("EnterWorktree", {"path": str(other)})
    assert not r.is_error, r.text_content()
    r = await session.call("EnterWorktree", {"name": "again"})
    assert r.is_error and "already" in r.text_content()


async def test_unknown_path_is_refused(session: Any, tmp_path: Path) -> None:
    r = await session.call("EnterWorktree", {"path": str(tmp_path)})
    assert r.is_error and "not a worktree" in r.text_content()


@pytest.mark.parametrize("name", ["../escape", "a//b", "a b", "x" * 65, "/abs", "a/./b", "semi;colon"])
async def test_bad_names_are_refused(session: Any, name: str) -> None:
    r = await session.call("EnterWorktree", {"name": name})
    assert r.is_error


async def test_post_checkout_hook_does_not_run(session: Any, repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    r = await session.call("EnterWorktree", {"name": "hooked"})
    assert not r.is_error
    assert not marker.exists()


async def test_exit_without_enter(session: Any) -> None:
    r = await session.call("ExitWorktree", {"action": "keep"})
    assert r.is_error

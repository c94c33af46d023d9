"""``isolation: "worktree"``: a git worktree of the child's own.

The worktree is made in ``<root>/.worktrees/<agent id>`` (inside the
parent's working directories, so the child is narrowed to it) on a branch
named after the agent, from the parent's HEAD. When a run ends with nothing
changed (no uncommitted changes, no new commits) the worktree and its branch
are removed, and made again for a follow-up; otherwise they are kept and the
report says where. The child's working directory is the worktree (or the
same sub-folder of it that the parent's root is of its repository).

git runs without hooks and without fsmonitor: the repository is the one the
agent works in, and making a worktree must not run its post-checkout hook.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

__all__ = ["WorktreeError", "finish_worktree", "make_worktree", "reopen_worktree"]

FOLDER = ".worktrees"
_HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class WorktreeError(Exception):
    """The worktree cannot be made; the message says why, for the model."""


async def _git(cwd: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    proc = await asyncio.create_subprocess_exec(
        "git", *_HARDENING, *args, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode("utf-8", "replace").strip()


async def make_worktree(root: Path, agent_id: str) -> dict[str, str]:
    """Make the worktree; its description (path, branch, base, where the child works)."""
    root = Path(os.path.realpath(root))
    code, top = await _git(root, "rev-parse", "--show-toplevel")
    if code != 0:
        raise WorktreeError(f"isolation 'worktree' needs a git repository, and {root} is not in one.")
    code, base = await _git(root, "rev-parse", "--verify", "HEAD")
    if code != 0:
        raise WorktreeError(f"isolation 'worktree' needs a commit to start from; {top} has none yet.")
    folder = root / FOLDER
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# worktrees made by pegboard\n*\n", encoding="utf-8")
    path = folder / agent_id
    code, out = await _git(root, "worktree", "add", "-b", agent_id, str(path), base)
    if code != 0:
        raise WorktreeError(f"git could not make the worktree {path}: {out}")
    inside = os.path.relpath(root, os.path.realpath(top))
    workdir = path if inside == "." else path / inside
    return {"path": str(path), "branch": agent_id, "base": base, "workdir": str(workdir), "repo": str(root)}


async def reopen_worktree(tree: dict[str, str]) -> None:
    """Make a removed worktree again, on its kept branch, for a follow-up."""
    path = Path(tree["path"])
    if path.is_dir():
        return
    code, out = await _git(Path(tree["repo"]), "worktree", "add", str(path), tree["branch"])
    if code != 0:
        code, out = await _git(Path(tree["repo"]), "worktree", "add", "-b", tree["branch"], str(path), tree["base"])
    if code != 0:
        raise WorktreeError(f"git could not make the worktree {path} again: {out}")


async def finish_worktree(tree: dict[str, str]) -> str:
    """Remove the worktree when nothing changed in it; say what became of it."""
    path = Path(tree["path"])
    if not path.is_dir():
        return ""
    code, dirty = await _git(path, "status", "--porcelain")
    _, commits = await _git(path, "log", "--oneline", f"{tree['base']}..HEAD")
    if code != 0 or dirty or commits:
        what = []
        if commits:
            what.append(f"{len(commits.splitlines())} new commit(s)")
        if dirty or code != 0:
            what.append("uncommitted changes")
        return (f"Its worktree {path} (branch {tree['branch']}) is kept: it has {' and '.join(what)}. "
                f"Merge the branch, or remove it with git worktree remove.")
    repo = Path(tree["repo"])
    code, out = await _git(repo, "worktree", "remove", "--force", str(path))
    if code != 0:
        return f"Its worktree {path} had no changes but could not be removed: {out}"
    await _git(repo, "branch", "-D", tree["branch"])
    return ""

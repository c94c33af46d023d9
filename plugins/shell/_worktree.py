"""EnterWorktree and ExitWorktree: a git worktree the shell moves into.

Worktrees live in ``<root>/.worktrees/<name>`` (always inside the working
directories) on branch ``worktree-<name>``; the folder ignores itself with a
``.gitignore`` of ``*``, so nothing in ``.git`` is edited for it. Entering
moves only the shell's directory: the session's working directories, and so
every permission decision, stay exactly as they were.

git runs here with the same hardening as read-only commands (no hooks, no
fsmonitor, no filter drivers): these tools run without asking, so a
post-checkout hook in a cloned repository must not run through them.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult

from ._git import git_safe_env
from ._models import EnterWorktreeInput, ExitWorktreeInput
from ._permission import shell_cwd
from ._runner import base_env

if TYPE_CHECKING:
    from pegboard import ToolContext

__all__ = ["enter_worktree", "exit_worktree"]


async def _git(ctx: ToolContext, cwd: Path, *args: str) -> tuple[int, str]:
    dirs = tuple(Path(os.path.realpath(d)) for d in ctx.session.working_dirs)
    env = await asyncio.to_thread(git_safe_env, base_env(dirs), [cwd])
    proc = await asyncio.create_subprocess_exec(
        "git", *args, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode("utf-8", "replace").strip()


async def _worktrees(ctx: ToolContext, cwd: Path) -> list[Path]:
    code, out = await _git(ctx, cwd, "worktree", "list", "--porcelain")
    if code != 0:
        return []
    return [Path(os.path.realpath(line[9:])) for line in out.splitlines() if line.startswith("worktree ")]


async def enter_worktree(args: EnterWorktreeInput, ctx: ToolContext) -> ToolResult:
    state: dict[str, Any] = ctx.state
    if state.get("worktree"):
        wt = state["worktree"]
        return ToolResult.error(f"The shell is already in the worktree {wt['path']}; ExitWorktree first.")
    here = shell_cwd(ctx.session, ctx.state)
    code, top = await _git(ctx, here, "rev-parse", "--show-toplevel")
    if code != 0:
        return ToolResult.error(f"{here} is not inside a git repository, so there is nothing to make a worktree of.")
    known = await _worktrees(ctx, here)
    if args.path is not None:
        target = Path(os.path.realpath(Path(args.path) if os.path.isabs(args.path) else here / args.path))
        if target not in known:
            listing = "\n".join(f"  {p}" for p in known)
            return ToolResult.error(f"{target} is not a worktree of this repository. Its worktrees:\n{listing}")
        state["worktree"] = {"path": target, "branch": None, "return_to": here, "base": None}
        state["cwd"] = target
        return ToolResult.text(f"The shell is now in the worktree {target}.")
    name = args.name or f"wt-{secrets.token_hex(3)}"
    base_dir = Path(os.path.realpath(ctx.session.root)) / ".worktrees"
    target = base_dir / name
    branch = f"worktree-{name}"
    _, base = await _git(ctx, here, "rev-parse", "HEAD")
    if target in known:
        created = False
    else:
        if target.exists():
            return ToolResult.error(f"{target} exists and is not a worktree; pick another name.")
        base_dir.mkdir(parents=True, exist_ok=True)
        ignore = base_dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# worktrees made by pegboard's EnterWorktree\n*\n")
        code, _ = await _git(ctx, here, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        add = ["worktree", "add", str(target), branch] if code == 0 else \
            ["worktree", "add", "-b", branch, str(target), "HEAD"]
        code, out = await _git(ctx, here, *add)
        if code != 0:
            return ToolResult.error(f"git could not create the worktree: {out}")
        created = True
    state["worktree"] = {"path": target, "branch": branch, "return_to": here, "base": base}
    state["cwd"] = target
    verb = "Created" if created else "Entered the existing"
    return ToolResult.text(
        f"{verb} worktree {target} on branch {branch}; the shell now runs there. "
        "The working directories (and so what needs approval) are unchanged. ExitWorktree returns."
    )


async def exit_worktree(args: ExitWorktreeInput, ctx: ToolContext) -> ToolResult:
    state: dict[str, Any] = ctx.state
    wt = state.get("worktree")
    if not wt:
        return ToolResult.error("The shell is not in a worktree entered with EnterWorktree.")
    path: Path = wt["path"]
    back: Path = wt["return_to"]
    if args.action == "keep":
        state["worktree"] = None
        state["cwd"] = back
        return ToolResult.text(f"Left {path} on disk (branch {wt['branch'] or 'unchanged'}); the shell is back in {back}.")
    if wt["branch"] is None:
        return ToolResult.error(f"{path} was not made by EnterWorktree in this session; use action 'keep'.")
    if path.exists() and not args.discard_changes:
        code, dirty = await _git(ctx, path, "status", "--porcelain")
        problems: list[str] = []
        if code != 0 or dirty:
            problems.append(f"uncommitted changes:\n{dirty}")
        if wt["base"]:
            _, commits = await _git(ctx, path, "log", "--oneline", f"{wt['base']}..HEAD")
            if commits:
                problems.append(f"commits not on the branch it started from:\n{commits}")
        if problems:
            return ToolResult.error(
                f"Not removing {path}: it has " + "; and ".join(problems)
                + "\nCommit or merge them, or call ExitWorktree again with discard_changes true to throw them away."
            )
    code, out = await _git(ctx, back, "worktree", "remove", "--force", str(path))
    if code != 0 and path.exists():
        return ToolResult.error(f"git could not remove the worktree: {out}")
    await _git(ctx, back, "branch", "-D", wt["branch"])
    state["worktree"] = None
    state["cwd"] = back
    return ToolResult.text(f"Removed {path} and branch {wt['branch']}; the shell is back in {back}.")

"""The Glob and Grep tools: ripgrep when installed, the same results in Python otherwise."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import replace
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard import ToolResult

from ._common import PathError, bind_checked, config_of, finish
from ._grep import GrepError, GrepQuery, find_rg, grep_python, grep_rg
from ._models import GlobInput, GrepInput
from ._walk import glob_regex, walk_files

if TYPE_CHECKING:
    from pegboard import ToolContext

    from ._config import FsConfig

__all__ = ["glob", "grep", "list_files"]

_MAX_GREP_LINE = 1000  # minified files have megabyte lines; a match's line is cut past this


def _backend(cfg: FsConfig) -> str | None:
    """The rg binary to use, or None for the Python engine; GrepError if rg is required and absent."""
    if cfg.search_backend == "python":
        return None
    rg = find_rg(cfg.rg_path)
    if rg is None and cfg.search_backend == "rg":
        raise GrepError("search_backend is 'rg' but ripgrep was not found; install it or set search_backend='auto'")
    return rg


def deny_check(ctx: ToolContext) -> Callable[[Path], bool] | None:
    """A test for files a deny rule keeps from this tool (``Read(./.env)`` denies Grep
    reading .env too), or None when no such rule exists, the common, free case.

    Without it, a Grep over the project, or with ``glob: ".env"``, would show
    exactly what the rule forbids Read to show.
    """
    from pegboard import PermissionRequest

    session = ctx.session
    rules = [c for name in dict.fromkeys(("Read", ctx.tool.name)) for c in ctx.rules_for("deny", name)]
    if not rules:
        return None

    def denied(path: Path) -> bool:
        for compiled in rules:
            # asked as this tool: Read rules cover Glob and Grep too
            request = PermissionRequest(tool=ctx.tool, input={"file_path": str(path), "path": str(path)},
                                        session=session, policy=session.policy)
            try:
                if compiled.matcher.matches(request):
                    return True
            except Exception:
                return True  # a deny rule that cannot be checked still denies
        return False

    return denied


def _root(ctx: ToolContext, raw: str | None) -> Path:
    real = bind_checked(ctx, raw or "")
    if not real.exists():
        raise PathError(f"{real} does not exist. The working directory is {ctx.session.root}.")
    return real


# --- Glob --------------------------------------------------------------------------


async def list_files(root: Path, rg: str | None, hidden: bool) -> list[Path]:
    """Every file under ``root`` that ripgrep would search (ignore files respected)."""
    if rg is None:
        stop = threading.Event()

        def collect() -> list[Path]:
            out: list[Path] = []
            for path in walk_files(root, hidden=hidden):
                if stop.is_set():
                    break
                out.append(path)
            return out

        try:
            return await asyncio.to_thread(collect)
        except BaseException:
            stop.set()
            raise
    argv = [rg, "--no-config", "--no-require-git", "--no-ignore-global", "--files", "--null"]
    if hidden:
        argv += ["--hidden", "--glob", "!.git"]
    proc = await asyncio.create_subprocess_exec(
        *argv, "--", str(root), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    return [Path(os.fsdecode(p)) for p in out.split(b"\0") if p]


async def glob(args: GlobInput, ctx: ToolContext) -> ToolResult:
    cfg = config_of(ctx)
    pattern = args.pattern.strip()
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        return ToolResult.error("pattern is matched below path; give the directory in path and a relative "
                                "pattern (no leading / or ~, no ..), e.g. path='/src', pattern='**/*.py'.")
    try:
        root = _root(ctx, args.path)
        rg = _backend(cfg)
    except (PathError, GrepError) as exc:
        return ToolResult.error(str(exc))
    if not root.is_dir():
        return ToolResult.error(f"{root} is a file; Glob searches in a directory. Give its folder as path.")
    # a pattern that names dot-files asks for them; ripgrep's default would hide them
    hidden = any(part.startswith(".") and part not in (".", "..") for part in pattern.split("/"))
    rx = glob_regex(pattern.removeprefix("./"))
    files = [p for p in await list_files(root, rg, hidden) if rx.match(p.relative_to(root).as_posix())]
    if (denied := deny_check(ctx)) is not None:
        files = [p for p in files if not denied(p)]

    def mtime(p: Path) -> float:
        try:
            return os.stat(p).st_mtime
        except OSError:
            return 0.0

    # most recently changed first: what the model is working on tends to be there
    files.sort(key=lambda p: (-mtime(p), p.as_posix()))
    if not files:
        return finish(ctx, f"No files match {pattern!r} in {root} (files listed in .gitignore and hidden files "
                           f"are skipped).")
    shown = files[: cfg.glob_limit]
    text = "\n".join(map(str, shown))
    if len(files) > len(shown):
        text += f"\n[{len(files) - len(shown)} more files not shown; use a narrower pattern or path.]"
    return finish(ctx, text)


# --- Grep --------------------------------------------------------------------------


def _nul_refusal(args: GrepInput) -> ToolResult | None:
    """A NUL character cannot be passed to ripgrep (a command line ends at it)
    and is in no file name or type name: said the same with either engine."""
    if "\0" in args.pattern:
        return ToolResult.error("Grep: pattern contains a NUL character, which cannot be searched for as typed; "
                                "write it as the escape \\x00 instead. Nothing was searched.")
    for name, value in (("glob", args.glob), ("type", args.type)):
        if value is not None and "\0" in value:
            return ToolResult.error(f"Grep: {name} contains a NUL character, which no file name or file type "
                                    f"holds; remove it and call again. Nothing was searched.")
    return None


async def grep(args: GrepInput, ctx: ToolContext) -> ToolResult:
    cfg = config_of(ctx)
    if (refused := _nul_refusal(args)) is not None:
        return refused
    try:
        root = _root(ctx, args.path)
        rg = _backend(cfg)
    except (PathError, GrepError) as exc:
        return ToolResult.error(str(exc))
    context = args.context or 0
    q = GrepQuery(
        pattern=args.pattern, root=root, mode=args.output_mode, glob=args.glob, type=args.type,
        before=args.before if args.before is not None else context,
        after=args.after if args.after is not None else context,
        line_numbers=args.line_numbers, ignore_case=args.ignore_case, multiline=args.multiline,
    )
    limit = cfg.grep_head_limit if args.head_limit is None else (args.head_limit or None)
    if (denied := deny_check(ctx)) is not None:
        if denied(root):
            return ToolResult.error(f"Grep: {root} is covered by a deny rule; it cannot be searched.")
        if root.is_dir():
            # every file the search could touch, hidden ones too (a glob can whitelist them)
            excluded = [p for p in await list_files(root, rg, True) if denied(p)]
            q = replace(q, exclude=tuple(excluded))
    try:
        if rg is not None:
            lines, more = await grep_rg(rg, q, limit)
        else:
            stop = threading.Event()
            try:
                lines, more = await asyncio.to_thread(grep_python, q, limit, stop)
            except BaseException:
                stop.set()  # a timed-out or cancelled call must not leave the walk running
                raise
    except GrepError as exc:
        return ToolResult.error(f"Grep: {exc}.")
    return finish(ctx, _render(q, lines, more, limit))


def _render(q: GrepQuery, lines: list[str], more: bool, limit: int | None) -> str:
    if not lines:
        return f"No matches for {q.pattern!r} in {q.root}."
    lines = [ln if len(ln) <= _MAX_GREP_LINE else ln[:_MAX_GREP_LINE] + " [… line cut]" for ln in lines]
    tail = (f"\n[Stopped at head_limit={limit}; more results exist. Narrow the pattern, path or glob, "
            f"or raise head_limit.]" if more else "")
    if q.mode == "files_with_matches":
        head = f"Found {len(lines)}{'+' if more else ''} file(s)\n"
        return head + "\n".join(lines) + tail
    if q.mode == "count":
        total = sum(int(ln.rsplit(":", 1)[1]) for ln in lines if ln.rsplit(":", 1)[-1].isdigit())
        return "\n".join(lines) + f"\n\n{total} matching line(s) in {len(lines)} file(s)" + tail
    return "\n".join(lines) + tail

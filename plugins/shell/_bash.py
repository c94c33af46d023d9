"""Bash, Monitor and TaskStop handlers."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult
from pegboard.paths import is_within

from ._classify import Verdict, classify
from ._git import git_safe_env
from ._models import BASH_DEFAULT_MS, BashInput, MonitorInput, TaskStopInput
from ._guard import guard
from ._permission import SandboxPlan, sandbox_plan, shell_cwd
from ._runner import (
    DRAIN_GRACE_S,
    CommandTooLong,
    Outcome,
    Wrapper,
    base_env,
    bash_argv,
    kill_group,
    run,
    spawn,
    spill_name,
    too_long,
)
from ._sandbox import wrap

if TYPE_CHECKING:
    from pegboard import ToolContext

    from ._config import ShellConfig

__all__ = ["bash", "monitor", "task_stop"]

_PREVIEW = 4_000
# Files larger than this are not counted as shown by head/tail (we would have to read them).
_SHOW_CHECK_LIMIT = 8 * 1024 * 1024


def _config(ctx: ToolContext) -> ShellConfig:
    from ._config import ShellConfig

    cfg = ctx.config
    return cfg if isinstance(cfg, ShellConfig) else ShellConfig()


_CACHES = (("XDG_CACHE_HOME", ".cache"), ("npm_config_cache", ".npm"))


async def _prepare(ctx: ToolContext, command: str, disable: bool) -> tuple[Path, dict[str, str], Wrapper,
                                                                             Verdict, str, SandboxPlan | None]:
    """cwd, env, sandbox wrapper, classification, a note for the model, and the box's plan."""
    cfg = _config(ctx)
    session = ctx.session
    note = ""
    cwd = shell_cwd(session, ctx.state)
    dirs = tuple(Path(os.path.realpath(d)) for d in session.working_dirs)
    if not any(is_within(cwd, d) for d in dirs):
        cwd = Path(os.path.realpath(session.root))
        ctx.state["cwd"] = cwd
        note = f"(The shell's directory was reset to {cwd}.)"
    plan = sandbox_plan(session, ctx.state, cfg, disable, layers=ctx.plugin_context.settings.layers,
                        plugin=ctx.plugin, prepare=True)
    # Under bwrap the session's tmp is mounted on /tmp; Landlock only lets TMPDIR point to it.
    tmp = plan.box.tmp if plan is not None and plan.backend == "landlock" else None
    env = base_env(dirs, cfg.env, cfg.pass_env, tmp)
    if plan is not None:
        # HOME is read-only in the box: caches (pip, uv, npm, go) go to the
        # box's own tmp, which lasts the session, unless the operator set them.
        inside_tmp = str(tmp) if tmp is not None else "/tmp"
        for key, folder in _CACHES:
            env.setdefault(key, f"{inside_tmp}/{folder}")
    verdict = classify(command, cwd)
    if verdict.read_only and verdict.uses_git:
        # Reading the repository's driver names runs git: not on the event loop.
        env = await asyncio.to_thread(git_safe_env, env, verdict.cwds)
    if plan is None:
        return cwd, env, (lambda argv: (argv, ())), verdict, note, None
    return cwd, env, (lambda argv: wrap(plan.backend, plan.box, argv)), verdict, note, plan


async def bash(args: BashInput, ctx: ToolContext) -> ToolResult:
    cfg = _config(ctx)
    refused = too_long(args.command)
    if refused is not None:
        return ToolResult.error(refused)
    cwd, env, wrapper, verdict, note, plan = await _prepare(ctx, args.command, args.dangerouslyDisableSandbox)
    data_dir = ctx.session.data_dir
    if args.run_in_background:
        return _start_background(args, ctx, cwd, env, wrapper)
    timeout_ms = args.timeout or BASH_DEFAULT_MS
    try:
        outcome = await run(args.command, wrapper, cwd=cwd, env=env, timeout_s=timeout_ms / 1000,
                            max_chars=cfg.max_output_chars, data_dir=data_dir, spill_dir=data_dir / ctx.plugin,
                            on_line=lambda line: ctx.output(line, "bash.line", line=line))
    except CommandTooLong as exc:
        return ToolResult.error(str(exc))
    notes = [note] if note else []
    notes.extend(_track_cwd(ctx, outcome))
    notes.extend(_made_unguarded(ctx, plan))
    if outcome.exit_code == 0 and outcome.spilled is None:
        _report_shown(ctx, verdict)
    return _result(args, outcome, timeout_ms, notes)


def _made_unguarded(ctx: ToolContext, plan: SandboxPlan | None) -> list[str]:
    """Protected paths the command created where none were (``git init sub``
    makes ``sub/.git``): the box could not keep what did not exist read-only,
    so what is in them is the command's. Said, so that neither the model nor
    the person takes their hooks and settings for someone else's."""
    if plan is None or plan.backend != "bubblewrap" or not plan.box.writable:
        return []
    before = plan.box.readonly
    after = guard(ctx.session, ctx.state, plan.box.writable).paths
    made = [p for p in after if not any(is_within(p, b) for b in before)]
    if not made:
        return []
    shown = ", ".join(str(p) for p in made[:5]) + (f" and {len(made) - 5} more" if len(made) > 5 else "")
    return [f"(This command created {shown}: protected paths the sandbox could not keep read-only while it ran, "
            "since they did not exist yet. What is in them (a repository's hooks and config, an editor's settings) "
            "is the command's; from now on the box keeps them read-only and the file tools ask before changing "
            "them. Review them before running git or an editor there.)"]


def _track_cwd(ctx: ToolContext, outcome: Outcome) -> list[str]:
    final = outcome.final_cwd
    if final is None:
        return []
    dirs = tuple(Path(os.path.realpath(d)) for d in ctx.session.working_dirs)
    if any(is_within(final, d) for d in dirs):
        ctx.state["cwd"] = final
        return []
    root = Path(os.path.realpath(ctx.session.root))
    ctx.state["cwd"] = root
    return [f"(The command ended in {final}, outside the working directories; "
            f"the shell's directory was reset to {root}.)"]


def _report_shown(ctx: ToolContext, verdict: Verdict) -> None:
    """cat, head, tail and sed -n that printed a whole file: it counts as read."""
    if not verdict.read_only:
        return
    for part in verdict.parts:
        for path, lines in part.shows:
            try:
                if not path.is_file():
                    continue
                if lines is not None:
                    if path.stat().st_size > _SHOW_CHECK_LIMIT:
                        continue
                    with open(path, "rb") as fh:
                        if sum(1 for _ in fh) > lines:
                            continue
            except OSError:
                continue
            # the fs plugin's hook (nothing happens when fs is not loaded)
            ctx.plugin_context.notify("pegboard_file_read", session=ctx.session, path=Path(path), source="Bash")


def _result(args: BashInput, outcome: Outcome, timeout_ms: float, notes: list[str]) -> ToolResult:
    text = outcome.output
    if outcome.spilled is not None:
        head, tail = text[:_PREVIEW], text[-_PREVIEW:] if len(text) > _PREVIEW else ""
        text = (f"{head}\n\n... [output truncated: {outcome.total_chars} bytes in all; "
                f"the whole output is in {outcome.spilled}, read it with Read and offset/limit] ...\n\n{tail}")
    text = text.rstrip("\n")
    lines = [text] if text else ["(no output)"]
    if outcome.timed_out:
        lines.append(f"Command timed out after {timeout_ms / 1000:g} s; its whole process group was killed. "
                     "Run it with a larger timeout, or with run_in_background.")
    elif outcome.exit_code not in (0, None):
        lines.append(f"Exit code: {outcome.exit_code}")
    lines.extend(notes)
    result = ToolResult.text("\n".join(lines), is_error=outcome.timed_out or outcome.exit_code != 0)
    return result.model_copy(update={"structured_content": {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "output_file": str(outcome.spilled) if outcome.spilled else None,
    }})


def _start_background(args: BashInput, ctx: ToolContext, cwd: Path, env: dict[str, str],
                      wrapper: Wrapper) -> ToolResult:
    out_file = spill_name(ctx.session.data_dir / ctx.plugin, "bash-background")
    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def job() -> dict[str, Any]:
        outcome = await run(args.command, wrapper, cwd=cwd, env=env, timeout_s=None, max_chars=0,
                            data_dir=ctx.session.data_dir, spill_dir=out_file.parent, output_file=out_file,
                            started=started)
        return {"exit_code": outcome.exit_code, "output_file": str(out_file)}

    def stop() -> None:
        if started.done():
            kill_group(started.result())

    label = args.description or args.command[:80]
    task_id = ctx.session.tasks.start(job(), kind="bash", description=label, on_stop=stop)
    return ToolResult.text(
        f"Started in the background as {task_id}. Its output goes to {out_file} (Read it at any time). "
        f"You will be told when it ends; TaskStop with task_id {task_id} stops it."
    ).model_copy(update={"structured_content": {"task_id": task_id, "output_file": str(out_file)}})


# --- Monitor ------------------------------------------------------------------


async def monitor(args: MonitorInput, ctx: ToolContext) -> ToolResult:
    # the input model refuses a call without a command and fills in the label
    command, label = args.command, args.description
    assert command is not None and label is not None
    refused = too_long(command)
    if refused is not None:
        return ToolResult.error(refused)
    cwd, env, wrapper, _verdict, _note, _plan = await _prepare(ctx, command, False)
    holder: dict[str, Any] = {}
    started: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def watch() -> dict[str, Any]:
        fd, cwd_name = tempfile.mkstemp(prefix="pb-cwd-", dir=ctx.session.data_dir)
        lines = 0
        timed_out = False
        argv, extra_fds = wrapper(bash_argv(command, fd))
        try:
            proc, stream, transport = await spawn(argv, cwd=cwd, env=env, pass_fds=(fd, *extra_fds),
                                                  merge_stderr=False)
        finally:
            for extra in extra_fds:
                os.close(extra)
        started.set_result(proc.pid)

        async def pump() -> None:
            nonlocal lines
            assert stream is not None
            while True:
                raw = await stream.readline()
                if not raw:
                    break
                lines += 1
                line = raw.decode("utf-8", "replace").rstrip("\n")
                ctx.output(line, "monitor.line", task_id=holder.get("id"), description=args.description, line=line)

        pumping = asyncio.ensure_future(pump())
        exiting = asyncio.ensure_future(proc.wait())
        try:
            done, _ = await asyncio.wait({pumping, exiting}, timeout=args.timeout_ms / 1000,
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done:
                timed_out = True
            elif exiting in done:
                # The script's exit ends the watch; its last lines may still be in the pipe.
                await asyncio.wait({pumping}, timeout=DRAIN_GRACE_S)
            else:
                await asyncio.wait({exiting}, timeout=DRAIN_GRACE_S)
        finally:
            pumping.cancel()
            kill_group(proc.pid)
            await proc.wait()
            exiting.cancel()
            if transport is not None:
                transport.close()
            os.close(fd)
            os.unlink(cwd_name)
        return {"lines": lines, "exit_code": None if timed_out else proc.returncode, "timed_out": timed_out}

    def stop() -> None:
        if started.done():
            kill_group(started.result())

    task_id = ctx.session.tasks.start(watch(), kind="monitor", description=label, on_stop=stop)
    holder["id"] = task_id
    return ToolResult.text(
        f"Watching as {task_id}: every line the script prints arrives as an event labelled "
        f"{args.description!r}. The watch ends when the script exits or after {args.timeout_ms / 1000:g} s; "
        f"TaskStop with task_id {task_id} ends it sooner."
    ).model_copy(update={"structured_content": {"task_id": task_id}})


# --- TaskStop -----------------------------------------------------------------


async def task_stop(args: TaskStopInput, ctx: ToolContext) -> ToolResult:
    tasks = ctx.session.tasks
    task_id = args.task_id
    assert task_id is not None  # the input model takes it from shell_id when only that is given
    record = tasks.get(task_id)
    if record is None or record.status != "running":
        running = [t.id for t in tasks.list() if t.status == "running"]
        state = "no such task" if record is None else f"it is already {record.status}"
        listing = ", ".join(running) if running else "none"
        return ToolResult.error(f"Cannot stop {task_id}: {state}. Running tasks: {listing}.")
    stopped = await tasks.stop(task_id)
    if not stopped:
        return ToolResult.error(f"{task_id} ended before it could be stopped.")
    return ToolResult.text(f"Stopped {task_id} ({record.kind}: {record.description}).")

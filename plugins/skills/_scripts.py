"""run_skill_script: run a script the active skill ships, with no shell.

The script is started as an argv list (never through ``sh -c``): its
shebang line names the interpreter, or failing that its extension does, or it
is run directly when it is an executable file. The path must resolve, with
symlinks followed, inside the active skill's folder, and arguments carrying
shell metacharacters are refused even though no shell sees them: skill
scripts are often thin wrappers that hand their arguments to ``sh -c`` or
``eval``, and the model has no reason to send such characters to them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from pegboard import ToolContext, ToolResult

from ._activation import active

__all__ = ["RunSkillScriptInput", "build_argv", "check_args", "resolve_script", "run_skill_script"]

# Characters a POSIX shell gives meaning to, plus control characters.
SHELL_METACHARACTERS = frozenset("|&;<>()$`\\\"'*?[]{}~!#\n\r\x00")
MAX_OUTPUT_CHARS = 30_000
MAX_ARGS = 100
MAX_ARG_CHARS = 4096

_BY_EXTENSION: dict[str, list[str]] = {
    ".py": [sys.executable],
    ".sh": ["sh"],
    ".bash": ["bash"],
    ".js": ["node"],
    ".mjs": ["node"],
    ".rb": ["ruby"],
    ".pl": ["perl"],
}


class RunSkillScriptInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str = Field(description="The active skill that ships the script.")
    relpath: str = Field(description="The script's path inside the skill's folder, e.g. scripts/check.sh.")
    args: list[str] = Field(default_factory=list, description="Arguments, one string each; no shell metacharacters.")


def check_args(args: list[str]) -> str | None:
    """None when the arguments are acceptable, else why not."""
    if len(args) > MAX_ARGS:
        return f"too many arguments ({len(args)}); the limit is {MAX_ARGS}"
    for i, arg in enumerate(args):
        if len(arg) > MAX_ARG_CHARS:
            return f"argument {i} is {len(arg)} characters; the limit is {MAX_ARG_CHARS}"
        bad = sorted({c for c in arg if c in SHELL_METACHARACTERS})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            return (f"argument {i} ({arg!r}) contains shell metacharacters ({shown}); "
                    "pass plain words, one per argument")
    return None


def resolve_script(real_base: Path, relpath: str) -> Path | str:
    """The script's real path, or a message saying why it is refused."""
    if not relpath or "\x00" in relpath:
        return "relpath is empty or contains a NUL byte"
    if os.path.isabs(relpath) or relpath.startswith("~"):
        return f"relpath must be relative to the skill's folder, not {relpath!r}"
    real = Path(os.path.realpath(real_base / relpath))
    if not real.is_relative_to(real_base) or real == real_base:
        return f"{relpath!r} resolves outside the skill's folder ({real}); only the skill's own files run"
    if not real.is_file():
        return f"{relpath!r} is not a file in the skill's folder {real_base}"
    return real


def build_argv(script: Path, args: list[str]) -> list[str] | str:
    """The argv that runs ``script``, or a message saying why it cannot run."""
    try:
        with script.open("rb") as handle:
            first = handle.readline(512)
    except OSError as exc:
        return f"cannot read {script}: {exc.strerror or exc}"
    if first.startswith(b"#!"):
        line = first[2:].decode("utf-8", "replace").strip()
        # Like the kernel: the interpreter, then at most one argument (the rest of the line).
        interpreter, _, rest = line.partition(" ")
        if not interpreter:
            return f"{script} has an empty shebang line"
        return [interpreter, *([rest.strip()] if rest.strip() else []), str(script), *args]
    prefix = _BY_EXTENSION.get(script.suffix.lower())
    if prefix is not None:
        return [*prefix, str(script), *args]
    if os.access(script, os.X_OK):
        return [str(script), *args]
    return (f"{script.name} has no shebang line, no known extension "
            f"({', '.join(sorted(_BY_EXTENSION))}) and is not executable; cannot tell how to run it")


async def run_skill_script(args: RunSkillScriptInput, ctx: ToolContext) -> ToolResult:
    current = active(ctx.state)
    if current is None:
        return ToolResult.error(f"No skill is active. Start {args.skill!r} with the Skill tool first; "
                                "only the active skill's scripts run.")
    if current.skill.name != args.skill:
        return ToolResult.error(f"{args.skill!r} is not the active skill ({current.skill.name!r} is). "
                                f"Start it with the Skill tool first; only the active skill's scripts run.")
    problem = check_args(args.args)
    if problem:
        return ToolResult.error(f"Refused: {problem}.")
    script = resolve_script(current.real_base, args.relpath)
    if isinstance(script, str):
        return ToolResult.error(f"Refused: {script}.")
    argv = build_argv(script, args.args)
    if isinstance(argv, str):
        return ToolResult.error(argv)
    timeout = float(getattr(ctx.config, "script_timeout_s", 120.0))
    env = {**os.environ, "PEGBOARD_SKILL_DIR": str(current.real_base), "CLAUDE_SKILL_DIR": str(current.real_base)}
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(ctx.session.root),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Its own process group, so a timeout stops the script's children too.
            start_new_session=True,
        )
    except OSError as exc:
        return ToolResult.error(f"Could not start {argv[0]!r}: {exc.strerror or exc}. "
                                "Is the script's interpreter installed?")
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        _kill_group(proc)
        await proc.wait()
        return ToolResult.error(f"{args.relpath} did not finish within {timeout:g}s and was stopped.")
    except asyncio.CancelledError:
        _kill_group(proc)
        raise
    code = proc.returncode
    text = _format(args.relpath, code, stdout, stderr)
    return ToolResult.text(text, is_error=code != 0)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _format(relpath: str, code: int | None, stdout: bytes, stderr: bytes) -> str:
    parts = [f"{relpath} exited with code {code}."]
    for label, data in (("stdout", stdout), ("stderr", stderr)):
        text = data.decode("utf-8", "replace")
        if not text:
            continue
        if len(text) > MAX_OUTPUT_CHARS:
            half = MAX_OUTPUT_CHARS // 2
            cut = len(text) - 2 * half
            text = f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"
        parts.append(f"{label}:\n{text.rstrip()}")
    return "\n\n".join(parts)

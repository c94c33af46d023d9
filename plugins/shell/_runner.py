"""Running one command: a fresh environment, one output pipe, a process
group we can kill, and the directory the shell ended in.

bash runs with ``--noprofile --norc`` and an environment built from a short
allow-list, so BASH_ENV, ENV, LD_PRELOAD, LESSOPEN, RIPGREP_CONFIG_PATH,
GIT_* and every other variable that makes a harmless program run code never
reach it. PATH keeps only absolute directories outside the working
directories: a file the model wrote must not stand in for ``ls``.

The final directory comes from an EXIT trap writing ``pwd -P`` to fd 3, a
file we opened: writing through an inherited descriptor works inside any
sandbox, and a command that clobbers it only misplaces its own next call.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pegboard.paths import is_within

__all__ = ["CommandTooLong", "Outcome", "Wrapper", "base_env", "bash_argv", "kill_group", "run", "spawn",
           "spill_name", "too_long"]

_PASS = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "TZ", "SHELL")
_FIXED = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "NO_COLOR": "1",
    "PEGBOARD_SHELL": "1",
}
# Never passed, whatever the configuration says: each one runs code.
FORBIDDEN_ENV = frozenset({
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "GLOBIGNORE",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LESSOPEN", "LESSCLOSE", "RIPGREP_CONFIG_PATH",
    "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "PERL5LIB", "RUBYOPT", "NODE_OPTIONS", "EDITOR", "VISUAL",
    "PAGER", "GIT_PAGER", "MANPAGER", "BROWSER", "PATH",
})
_TRAP = "trap 'builtin pwd -P >&{fd} 2>/dev/null' EXIT\n"
# Spilled output is capped: the model reads a file, not a disk-filling stream.
_SPILL_CAP = 64 * 1024 * 1024
DRAIN_GRACE_S = 2.0


def sanitized_path(path: str, working_dirs: Sequence[Path]) -> str:
    keep: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if any(is_within(real, d) for d in working_dirs):
            continue
        if entry not in keep:
            keep.append(entry)
    return os.pathsep.join(keep) or "/usr/local/bin:/usr/bin:/bin"


def base_env(working_dirs: Sequence[Path], extra: Mapping[str, str] | None = None,
             pass_through: Sequence[str] = (), tmp: Path | None = None) -> dict[str, str]:
    """A fresh environment for one command (nothing from the last one)."""
    env = {k: os.environ[k] for k in (*_PASS, *pass_through) if k in os.environ and k not in FORBIDDEN_ENV}
    env["PATH"] = sanitized_path(os.environ.get("PATH", ""), working_dirs)
    env.update(_FIXED)
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    for k, v in (extra or {}).items():
        if k not in FORBIDDEN_ENV:
            env[k] = v
    return env


class CommandTooLong(Exception):
    """The system refused to start the command: it is too long (``E2BIG``).
    The message is for the model."""


# The command reaches bash as one argument (``bash -c``), and Linux caps one
# argument at 32 pages (MAX_ARG_STRLEN, 128 KiB with 4 KiB pages), whatever
# ARG_MAX says; other systems cap only the whole list, which E2BIG reports.
_ONE_ARGUMENT = 32 * os.sysconf("SC_PAGE_SIZE") if sys.platform.startswith("linux") else None
_WRITE_IT_DOWN = ("It was not run. Write the script to a file (the Write tool) and run that file "
                  "(`bash script.sh`), or split the work into shorter commands.")


def too_long(command: str) -> str | None:
    """Why ``command`` cannot be started, known before trying: longer than one
    argument to a program may be. None when it fits."""
    if _ONE_ARGUMENT is None:
        return None
    size = len(_TRAP) + 8 + len(os.fsencode(command)) + 1  # the trap (fd up to 8 digits), the NUL
    if size <= _ONE_ARGUMENT:
        return None
    return (f"The command is too long to run: {len(os.fsencode(command)):,} bytes, and the system starts a "
            f"command of at most {_ONE_ARGUMENT - len(_TRAP) - 9:,} bytes. {_WRITE_IT_DOWN}")


def bash_argv(command: str, cwd_fd: int) -> list[str]:
    """bash for ``command``; its final directory is written to ``cwd_fd``."""
    return ["/bin/bash", "--noprofile", "--norc", "-c", _TRAP.format(fd=cwd_fd) + command]


@dataclass
class Outcome:
    """What one run produced."""

    output: str
    exit_code: int | None
    timed_out: bool
    final_cwd: Path | None
    spilled: Path | None
    total_chars: int


def kill_group(pid: int) -> None:
    """SIGKILL the whole process group ``pid`` leads (start_new_session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def spill_name(folder: Path, stem: str) -> Path:
    """A new file for spilled output in ``folder`` (the session's folder of
    the plugin's name), made if missing."""
    out = folder
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    return out / f"{stem}-{uuid.uuid4().hex[:8]}.log"


async def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int],
                output: int | None = None, merge_stderr: bool = True) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader | None,
                                                    asyncio.BaseTransport | None]:
    """Start ``argv`` in its own session with stdout and stderr on one pipe.

    The pipe is ours, not asyncio's: asyncio's ``Process.wait()`` also waits
    for its pipes to close, and a grandchild that left the group (``setsid``)
    would hold one open for as long as it lives. ``output``: a file
    descriptor to write to instead of a pipe (background jobs).
    ``merge_stderr=False`` discards standard error instead.
    """
    loop = asyncio.get_running_loop()
    if output is not None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=str(cwd), env=dict(env), stdin=asyncio.subprocess.DEVNULL, stdout=output,
                stderr=output, pass_fds=tuple(pass_fds), start_new_session=True)
        except OSError as exc:
            _raise_too_long(exc)
            raise
        return proc, None, None
    rfd, wfd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), env=dict(env), stdin=asyncio.subprocess.DEVNULL, stdout=wfd,
            stderr=wfd if merge_stderr else asyncio.subprocess.DEVNULL, pass_fds=tuple(pass_fds),
            start_new_session=True)
    except BaseException as exc:
        os.close(rfd)
        if isinstance(exc, OSError):
            _raise_too_long(exc)
        raise
    finally:
        os.close(wfd)
    reader = asyncio.StreamReader(limit=1 << 20)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                os.fdopen(rfd, "rb", buffering=0))
    return proc, reader, transport


def _raise_too_long(exc: OSError) -> None:
    """``Argument list too long`` as a sentence about the call (the command
    with its environment and the sandbox's arguments passed the system's limit)."""
    if exc.errno == errno.E2BIG:
        raise CommandTooLong(f"The command is too long to run: with its environment it passes the system's limit "
                             f"on what one program may be started with. {_WRITE_IT_DOWN}") from None


Wrapper = Callable[[list[str]], tuple[list[str], tuple[int, ...]]]


async def run(command: str, wrap: Wrapper, *, cwd: Path, env: Mapping[str, str],
              timeout_s: float | None, max_chars: int, data_dir: Path, spill_dir: Path, output_file: Path | None = None,
              started: asyncio.Future[int] | None = None,
              on_line: Callable[[str], None] | None = None) -> Outcome:
    """Run ``command`` in bash (``wrap`` puts it in the sandbox) and collect its output.

    With ``output_file`` (background jobs), output goes straight to that file.
    Otherwise up to ``max_chars`` are kept; past that, everything goes to a
    file in ``spill_dir`` and the result is a preview (``data_dir`` holds the
    short-lived file the shell's directory is read back through). ``on_line`` is
    told each line of output as it comes (progress for a host).
    """
    cwd_fd, cwd_path = tempfile.mkstemp(prefix="pb-cwd-", dir=data_dir)
    sink = open(output_file, "wb") if output_file is not None else None  # noqa: SIM115
    transport: asyncio.BaseTransport | None = None
    try:
        argv, extra_fds = wrap(bash_argv(command, cwd_fd))
        try:
            proc, stream, transport = await spawn(argv, cwd=cwd, env=env, pass_fds=(cwd_fd, *extra_fds),
                                                  output=sink.fileno() if sink is not None else None)
        finally:
            for fd in extra_fds:
                os.close(fd)
        if started is not None and not started.done():
            started.set_result(proc.pid)
        collector = _Collector(max_chars, spill_dir, on_line) if stream is not None else None
        reader = asyncio.ensure_future(collector.drain(stream)) if collector and stream else None
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), timeout=timeout_s)
        except asyncio.TimeoutError:
            timed_out = True
        except asyncio.CancelledError:
            kill_group(proc.pid)
            await proc.wait()
            if reader is not None:
                reader.cancel()
            raise
        # Whatever the command left running in its group goes with it.
        kill_group(proc.pid)
        await proc.wait()
        detached = False
        if reader is not None:
            # A process that left the group (setsid) may still hold the pipe:
            # give it a moment to finish writing, then stop listening.
            done, _ = await asyncio.wait({reader}, timeout=DRAIN_GRACE_S)
            if not done:
                reader.cancel()
                detached = True
        final = _read_cwd(cwd_path)
        if collector is not None:
            text, spilled, total = collector.result()
        else:
            text, spilled, total = "", None, 0
        if detached:
            text += ("\n[a process the command started outside its process group still holds the output; "
                     "the output stops here. Use run_in_background for processes that should keep running.]")
        return Outcome(text, None if timed_out else proc.returncode, timed_out, final, spilled, total)
    finally:
        if transport is not None:
            transport.close()
        os.close(cwd_fd)
        if sink is not None:
            sink.close()
        try:
            os.unlink(cwd_path)
        except OSError:
            pass


def _read_cwd(path: str) -> Path | None:
    try:
        text = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return None
    if not text:
        return None
    final = Path(text[-1])
    return final if final.is_absolute() and final.is_dir() else None


class _Collector:
    """Keeps output in memory up to a limit, then spills it all to a file."""

    def __init__(self, max_chars: int, spill_dir: Path, on_line: Callable[[str], None] | None = None):
        self.on_line = on_line
        self._partial = b""
        self.max_bytes = max_chars * 4
        self.max_chars = max_chars
        self.spill_dir = spill_dir
        self.head = bytearray()
        self.file: Path | None = None
        self._fh: object = None
        self.written = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        try:
            while True:
                chunk = await stream.read(65536)
                if not chunk:
                    break
                if self.on_line is not None:
                    *lines, self._partial = (self._partial + chunk).split(b"\n")
                    self._partial = self._partial[-65536:]
                    for line in lines:
                        self.on_line(line.decode("utf-8", "replace"))
                if self.file is None:
                    self.head += chunk
                    if len(self.head) > self.max_bytes:
                        self._start_spill()
                else:
                    self._write(chunk)
        finally:
            if self._fh is not None:
                self._fh.close()  # type: ignore[attr-defined]

    def _start_spill(self) -> None:
        self.file = spill_name(self.spill_dir, "bash-output")
        self._fh = open(self.file, "wb")  # noqa: SIM115
        self._write(bytes(self.head))
        self.head = self.head[: self.max_bytes]

    def _write(self, chunk: bytes) -> None:
        if self.written < _SPILL_CAP:
            self._fh.write(chunk[: _SPILL_CAP - self.written])  # type: ignore[attr-defined]
        self.written += len(chunk)

    def result(self) -> tuple[str, Path | None, int]:
        if self.file is None:
            text = self.head.decode("utf-8", "replace")
            if len(text) <= self.max_chars:
                return text, None, len(text)
            # Many bytes per char kept it under the byte limit: spill now.
            self.file = spill_name(self.spill_dir, "bash-output")
            self.file.write_bytes(bytes(self.head))
            return text, self.file, len(text)
        return self.head.decode("utf-8", "replace"), self.file, self.written

"""Follow one call through pegboard's own code: which core module calls which.

``trace(work)`` runs ``await work()`` under ``sys.setprofile`` (and
``threading.setprofile``, for handlers run in a worker thread) and records
every Python function of pegboard's that runs: core modules (``core/``) and
plugins (``plugins/``). A ``Path`` is what tests compare it by:

- ``functions``: the functions run (code objects, by file and name);
- ``files``: the files they are in, relative to the repository;
- ``edges``: (caller module, callee module) pairs where both are core
  modules and differ, the caller being the nearest frame of pegboard's own
  code (a plugin's or a library's frame in between is not an edge of the core);
- ``back_and_forth``: pairs of core modules each of which calls the other.

tests/core/engine/test_core_call_paths.py follows a Read, a Bash decision and an Agent
call; ``uv run pytest tests/core/engine/test_core_call_paths.py -s`` prints the files
each passes through and the calls between core modules (with
``CALL_PATHS_FUNCTIONS=1``, every function too).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pegboard

__all__ = ["CallPath", "trace"]

CORE = str(Path(pegboard.__file__).resolve().parent) + "/"
try:
    import pegboard.plugins as _plugins

    PLUGINS = str(Path(_plugins.__file__).resolve().parent) + "/"
except ImportError:  # pragma: no cover - the plugins are part of the distribution
    PLUGINS = "\x00"


def _where(filename: str) -> str | None:
    """``core/_x.py`` or ``plugins/fs/_y.py`` for pegboard's own files, else None."""
    if filename.startswith(PLUGINS):
        return "plugins/" + filename[len(PLUGINS):]
    if filename.startswith(CORE):
        return "core/" + filename[len(CORE):]
    return None


def _core_module(where: str | None) -> str | None:
    if where is None or not where.startswith("core/") or where.startswith("core/plugins/"):
        return None
    return where[len("core/"):].removesuffix(".py").replace("/", ".")


@dataclass
class CallPath:
    """What one traced call ran through."""

    functions: set[tuple[str, str]] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)
    everything: set[tuple[str, str]] = field(default_factory=set)
    """Every Python function run, libraries' and the standard library's too (file, name)."""

    @property
    def files(self) -> list[str]:
        return sorted({where for where, _ in self.functions})

    @property
    def core_files(self) -> list[str]:
        return [f for f in self.files if _core_module(f) is not None]

    @property
    def back_and_forth(self) -> list[tuple[str, str]]:
        return sorted((a, b) for a, b in self.edges if a < b and (b, a) in self.edges)

    def describe(self, title: str) -> str:
        lines = [f"{title}: {len(self.functions)} functions of pegboard's in {len(self.files)} files "
                 f"({len(self.core_files)} of the core); {len(self.everything)} functions in "
                 f"{len({f for f, _ in self.everything})} files with the libraries'"]
        lines += [f"  {f}" for f in self.files]
        if os.environ.get("CALL_PATHS_FUNCTIONS"):
            lines += [f"    {f}: {name}" for f, name in sorted(self.functions)]
        lines.append("  core module calls:")
        lines += [f"    {a} -> {b}" for a, b in sorted(self.edges)]
        pairs = self.back_and_forth
        lines.append("  back and forth: " + (", ".join(f"{a} <-> {b}" for a, b in pairs) if pairs else "none"))
        return "\n".join(lines)


class _Recorder:
    def __init__(self) -> None:
        self.path = CallPath()
        self._known: dict[CodeType, str | None] = {}
        self._lock = threading.Lock()

    def _file(self, code: CodeType) -> str | None:
        found = self._known.get(code, "?")
        if found == "?":
            found = self._known[code] = _where(code.co_filename)
        return found

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        where = self._file(code)
        with self._lock:
            self.path.everything.add((code.co_filename, code.co_qualname))
            if where is None:
                return
            self.path.functions.add((where, code.co_qualname))
            callee = _core_module(where)
            if callee is None:
                return
            caller = frame.f_back
            # The nearest frame of pegboard's own code: a library between (pluggy,
            # asyncio, pydantic) does not hide who called; a plugin does.
            while caller is not None:
                found = self._file(caller.f_code)
                if found is not None:
                    module = _core_module(found)
                    if module is not None and module != callee:
                        self.path.edges.add((module, callee))
                    break
                caller = caller.f_back


async def trace(work: Callable[[], Awaitable[Any]]) -> CallPath:
    """Run ``await work()`` with every function call of pegboard's recorded."""
    recorder = _Recorder()
    # Worker threads started before now would not be profiled: a fresh
    # default executor starts its threads with the profile set.
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor()
    loop.set_default_executor(executor)
    old, old_threads = sys.getprofile(), threading.getprofile()
    threading.setprofile(recorder)
    sys.setprofile(recorder)
    try:
        await work()
    finally:
        sys.setprofile(old)
        threading.setprofile(old_threads)  # type: ignore[arg-type]
        executor.shutdown(wait=False)
    return recorder.path

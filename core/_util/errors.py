"""How a failure is told to the operator: one line naming the plugin's own
file and line (not pegboard's), secrets redacted; and the report on stderr
for a failure that nothing can refuse any more."""

from __future__ import annotations

import os
import sys
import traceback

import pluggy

__all__ = ["report_failure", "short_error"]


def short_error(exc: BaseException) -> str:
    """``Type: message (at file:line)``, the line being the last one of the
    plugin's own code the error passed through (not pegboard's, nor the
    import machinery's): that is where its author looks."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_plugin_frame(f.filename)]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    from .redact import redact  # (its patterns compile at import: only a failure pays for them)

    return f"{type(exc).__name__}: {redact(str(exc))}{where}"  # a hook's error may quote a call's input


def report_failure(what: str, exc: BaseException) -> None:
    """Something failed where nothing can be refused any more (a plugin's
    hook after the work, a cleanup): say so on stderr, for the operator,
    and carry on."""
    print(f"pegboard: {what} failed: {short_error(exc)}", file=sys.stderr)


# The package's own folder, wherever this module sits in it: a frame below it is pegboard's.
_CORE_DIR = os.path.dirname(os.path.abspath(sys.modules[__name__.partition(".")[0]].__file__ or "")) + os.sep


def _is_plugin_frame(filename: str) -> bool:
    if filename.startswith(("<", _CORE_DIR)):
        return False
    return not filename.startswith(_STDLIB_DIRS)


def _stdlib_dirs() -> tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({os.path.join(paths[key], "") for key in ("stdlib", "platstdlib") if paths.get(key)}) \
        + (os.path.join(os.path.dirname(pluggy.__file__), ""),)


_STDLIB_DIRS = _stdlib_dirs()

"""What every fs handler does around its work: bind the path to the permission
check, and append the one-time notes about files changed on disk."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult
from pegboard.paths import is_within, resolve_path

from ._config import FsConfig
from ._tracking import tracker

if TYPE_CHECKING:
    from pegboard import ToolContext

__all__ = ["HARDLINK_OK", "PathError", "bind_checked", "config_of", "finish", "record_check"]

_CHECKED = "checked"
# state key: resolved paths whose extra hard links the permission check saw and cleared
HARDLINK_OK = "hardlink_ok"


class PathError(Exception):
    """A path the handler must not open; the message is for the model."""


def config_of(ctx: ToolContext) -> FsConfig:
    return ctx.config if isinstance(ctx.config, FsConfig) else FsConfig()


def _key(tool: str, raw: str) -> str:
    return f"{tool}\x00{raw}"


def record_check(state: dict[str, Any], tool: str, raw: str, real: str, call_id: str | None = None) -> None:
    """The permission vote saw ``raw`` as ``real``: remember it for the handler.

    Keyed by call id when the core passes one on the request: then two calls
    of one batch naming the same path cannot see each other's check. Without
    it, the key is (tool, path as typed), the latest vote winning.
    """
    checked: dict[str, str] = state.setdefault(_CHECKED, {})
    checked[_key(tool, raw)] = real
    if call_id:
        checked[f"call\x00{call_id}"] = real
    if len(checked) > 1024:  # votes whose calls never ran (denied) must not pile up forever
        for stale in list(checked)[:512]:
            del checked[stale]


def bind_checked(ctx: ToolContext, raw: str) -> Path:
    """The resolved path to open, guaranteed to be the one the permission check decided on.

    Re-resolving here and comparing closes the window between check and open
    for symlinks swapped in meanwhile; the O_NOFOLLOW walk in _safeio closes
    the window between this resolve and the open itself.
    """
    try:
        real = resolve_path(raw, ctx.session.root)
    except ValueError as exc:
        raise PathError(f"{raw!r} is not a usable path: {exc}.") from None
    records: dict[str, str] = ctx.state.get(_CHECKED, {})
    checked = records.pop(f"call\x00{ctx.call_id}", None) or records.get(_key(ctx.tool.name, raw))
    if checked is None:
        # no vote on record (a core that skipped plugins): fail closed outside the working dirs
        if not any(is_within(real, d) for d in ctx.session.working_dirs):
            raise PathError(f"{real} is outside the working directories and was not cleared by a permission check.")
        return real
    if checked != str(real):
        raise PathError(
            f"{raw} now resolves to {real}, not to {checked} as when permission was checked (a symlink changed "
            f"in between). Nothing was done; check the path and call again."
        )
    return real


def finish(ctx: ToolContext, result: ToolResult | str, *, skip: Path | None = None) -> ToolResult:
    """Append notes about files read earlier that changed since, once per change."""
    if isinstance(result, str):
        result = ToolResult.text(result)
    notes = tracker(ctx.state).changes(skip=skip)
    if notes:
        result = result.with_text_appended("\n".join(notes))
    return result

"""What every fs handler does around its work: bind the path to the permission
check, and append the one-time notes about files changed on disk."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pegboard import ToolResult
from pegboard.paths import is_within, resolve_path

from ._config import FsConfig
from ._tracking import ReadTracker, tracker

if TYPE_CHECKING:
    from pegboard import ToolContext

__all__ = ["HARDLINK_OK", "PathError", "bind_checked", "config_of", "finish", "opened_as_checked"]

# state key: resolved paths whose extra hard links the permission check saw and cleared
HARDLINK_OK = "hardlink_ok"


class PathError(Exception):
    """A path the handler must not open; the message is for the model."""


def config_of(ctx: ToolContext) -> FsConfig:
    return ctx.config if isinstance(ctx.config, FsConfig) else FsConfig()


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
    checked = ctx.resolved(raw)
    if checked is None:
        # the decision did not resolve it (a core that skipped plugins): fail closed outside the working dirs
        if not any(is_within(real, d) for d in ctx.session.working_dirs):
            raise PathError(f"{real} is outside the working directories and was not cleared by a permission check.")
        return real
    if checked != real:
        raise PathError(
            f"{raw} now resolves to {real}, not to {checked} as when permission was checked (a symlink changed "
            f"in between). Nothing was done; check the path and call again."
        )
    return real


def opened_as_checked(ctx: ToolContext, raw: str) -> str:
    """The real path the permission check decided on, for a handler that
    opens it through ``_safeio`` at once.

    No second resolve: ``_safeio`` opens this very path with no symlink
    followed in any component, so a symlink swapped in since the check makes
    the open fail, and what is opened is what was decided on whatever
    ``raw`` has come to mean meanwhile (a retargeted link in it leads
    nowhere new). Where the decision resolved nothing, as ``bind_checked``.
    """
    checked = ctx.resolved_str(raw)
    if checked is None:
        return str(bind_checked(ctx, raw))
    return checked


def finish(ctx: ToolContext, result: ToolResult | str, *, skip: str | Path | None = None,
           reads: ReadTracker | None = None) -> ToolResult:
    """Append notes about files read earlier that changed since, once per
    change (``reads``: the session's tracker, when the caller has it at hand)."""
    if isinstance(result, str):
        result = ToolResult.text(result)
    notes = (reads if reads is not None else tracker(ctx.state)).changes(skip=skip)
    if notes:
        result = result.with_text_appended("\n".join(notes))
    return result

"""Write and Edit, and the one careful path every fs write takes.

``write_checked``: bind the path to its permission check, refuse files the
session has not read (or that changed since), refuse hard-linked files the
check did not clear, keep a checkpoint, write atomically, and remember the
new content as read so the next edit needs no re-read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard import ToolResult
from pegboard.paths import is_within

from . import _safeio
from ._checkpoints import CheckpointStore
from ._common import HARDLINK_OK, PathError, bind_checked, config_of, finish
from ._models import EditInput, WriteInput
from ._text import decode_for_edit, encode_like
from ._tracking import tracker

if TYPE_CHECKING:
    from pegboard import ToolContext

__all__ = ["edit", "write", "write_checked", "HARDLINK_OK"]

Change = Callable[[bytes | None], tuple[bytes, str]]


async def write_checked(ctx: ToolContext, raw: str, change: Change, *, must_exist: bool) -> ToolResult:
    import anyio

    try:
        real = bind_checked(ctx, raw)
    except PathError as exc:
        return ToolResult.error(str(exc))
    result = await anyio.to_thread.run_sync(_write_sync, ctx, real, change, must_exist)
    return finish(ctx, result, skip=real)


def _write_sync(ctx: ToolContext, real: Path, change: Change, must_exist: bool) -> ToolResult:
    tool = ctx.tool.name
    made: list[Path] = []
    try:
        try:
            st = _safeio.stat_nofollow(real)
        except FileNotFoundError:
            if must_exist:
                return ToolResult.error(f"{real} does not exist (nor does its folder). Use Write to create a "
                                        "new file.")
            if not any(is_within(real.parent, d) for d in ctx.working_dirs):
                # outside the working directories nothing is created, whatever allowed the write
                return ToolResult.error(f"{real.parent} does not exist, and {tool} creates missing folders only "
                                        "inside the working directories. Nothing was written.")
            made = _safeio.make_folders(real.parent)
            st = _safeio.stat_nofollow(real)
    except _safeio.PathChanged as exc:
        return ToolResult.error(f"{exc}. Nothing was written; check the path and call again.")
    except OSError as exc:
        return ToolResult.error(f"Cannot create {real.parent}: {exc.strerror or exc}. Nothing was written.")
    if st is None and must_exist:
        return ToolResult.error(f"{real} does not exist. Use Write to create a new file.")
    old: bytes | None = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            return ToolResult.error(f"{real} is a directory; give the path of a file.")
        if not stat.S_ISREG(st.st_mode):
            return ToolResult.error(f"{real} is not a regular file; {tool} only writes regular files.")
        if (why := tracker(ctx.state).refusal(real, st, tool)) is not None:
            return ToolResult.error(why)
        if st.st_nlink > 1 and str(real) not in ctx.state.get(HARDLINK_OK, set()):
            return ToolResult.error(
                f"{tool} refused: {real} has {st.st_nlink} hard links, and another of its names may lie outside "
                f"the working directories. Nothing was written. Copy the file to a new name first if you "
                f"mean to change only this copy.")
        try:
            fd = _safeio.open_read(real)
        except OSError as exc:
            return ToolResult.error(f"Cannot read {real} before writing it: {exc}. Nothing was written.")
        with os.fdopen(fd, "rb") as f:
            old = f.read()
    try:
        data, message = change(old)
    except ValueError as exc:
        return ToolResult.error(f"{tool} made no change to {real}: {exc}.")
    # atomic_write removes its temp file on failure: an existing file keeps its old content, a new one is not made
    untouched = "The file was left as it was." if old is not None else f"{real.name} was not created."
    cfg = config_of(ctx)
    if cfg.checkpoints:
        store = CheckpointStore(ctx.session.data_dir / "checkpoints", max_bytes=cfg.max_checkpoint_bytes)
        try:
            store.save(real, old, tool, stat.S_IMODE(st.st_mode) if st is not None else None)
        except OSError as exc:
            # no write without the copy that lets it be undone
            return ToolResult.error(
                f"{tool} did not write {real}: the checkpoint that lets this change be undone could not be "
                f"saved in {store.root} ({exc.strerror or exc}). {untouched} Free some space there, or call "
                f"again once it is fixed.")
    try:
        new_st = _safeio.atomic_write(real, data, allow_multilinked=str(real) in ctx.state.get(HARDLINK_OK, set()))
    except _safeio.MultiplyLinked as exc:
        return ToolResult.error(f"{tool} refused: {exc}; another of its names may lie outside the working "
                                f"directories. Nothing was written.")
    except _safeio.PathChanged as exc:
        return ToolResult.error(f"{exc}. Nothing was written; check the path and call again.")
    except PermissionError:
        return ToolResult.error(f"The operating system does not let this process write in {real.parent}.")
    except OSError as exc:
        return ToolResult.error(f"Writing {real} failed: {exc.strerror or exc}. {untouched}")
    tracker(ctx.state).record(real, new_st)
    if made:
        message += f" (Created the folder{'s' if len(made) > 1 else ''} {', '.join(str(p) for p in made)}.)"
    return ToolResult.text(message)


# --- Write -------------------------------------------------------------------------


async def write(args: WriteInput, ctx: ToolContext) -> ToolResult:
    content = args.content

    def change(old: bytes | None) -> tuple[bytes, str]:
        if old is None:
            data = content.encode("utf-8")
            return data, f"Created {args.file_path} ({_lines(content)} lines, {len(data):,} bytes)."
        enc = decode_for_edit(old)
        text = content
        encoding = "utf-8"
        if enc is not None:
            encoding = enc.encoding
            # the file's convention wins over what the model typed: a CRLF file stays CRLF
            if enc.newline == "\r\n":
                text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        data = encode_like(text, encoding)
        return data, f"Wrote {args.file_path} ({_lines(content)} lines, {len(data):,} bytes; replaced the old content)."

    return await write_checked(ctx, args.file_path, change, must_exist=False)


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- Edit --------------------------------------------------------------------------


def replace_in(text: str, newline: str, old: str, new: str, replace_all: bool) -> tuple[str, int, int]:
    """Apply one Edit to ``text``: (new text, occurrences replaced, offset of the first).

    The model writes ``\\n``; in a CRLF file the same text is stored with
    ``\\r\\n``, so both sides are converted when the literal is not found.
    ValueError with advice when the edit cannot be applied.
    """
    if old == new:
        raise ValueError("old_string and new_string are the same; there is nothing to change")
    if old == "":
        if text == "":
            return new.replace("\n", newline) if newline == "\r\n" else new, 1, 0
        raise ValueError("old_string is empty; give the exact text to replace, or use Write for the whole file")
    count = text.count(old)
    if count == 0 and newline == "\r\n" and "\n" in old:
        old = old.replace("\r\n", "\n").replace("\n", "\r\n")
        new = new.replace("\r\n", "\n").replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        hint = ""
        stripped = old.strip()
        if stripped and stripped in text:
            hint = " Its text occurs with different leading/trailing whitespace; copy it exactly from Read's output."
        raise ValueError(f"old_string was not found in the file.{hint} Read the file again and copy the exact "
                         f"text, without the line-number prefix")
    if count > 1 and not replace_all:
        raise ValueError(f"old_string occurs {count} times. Add surrounding lines to make it unique, "
                         f"or set replace_all=true to change every occurrence")
    first = text.index(old)
    if newline == "\r\n":
        new = new.replace("\r\n", "\n").replace("\n", "\r\n")
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), count if replace_all else 1, first


def _snippet(text: str, offset: int, span: int, context: int = 3) -> str:
    start_line = text.count("\n", 0, offset)
    end_line = start_line + text.count("\n", offset, offset + span)
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the newline that ends the file is not a line of its own
    lo, hi = max(0, start_line - context), min(len(lines), end_line + context + 1)
    return "\n".join(f"{n + 1:>6}\t{lines[n].rstrip(chr(13))}" for n in range(lo, hi))


async def edit(args: EditInput, ctx: ToolContext) -> ToolResult:
    def change(old: bytes | None) -> tuple[bytes, str]:
        assert old is not None  # must_exist
        enc = decode_for_edit(old)
        if enc is None:
            raise ValueError("it is a binary file; Edit changes text files only")
        text, count, first = replace_in(enc.text, enc.newline, args.old_string, args.new_string, args.replace_all)
        new_span = len(args.new_string.replace("\n", enc.newline)) if count else 0
        what = f"replaced {count} occurrences" if count > 1 else "replaced 1 occurrence"
        return encode_like(text, enc.encoding), (
            f"Edited {args.file_path}: {what}. Around the first change:\n{_snippet(text, first, new_span)}")

    return await write_checked(ctx, args.file_path, change, must_exist=True)

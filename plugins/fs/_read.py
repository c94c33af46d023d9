"""The Read tool: text with line numbers, images, PDFs, notebooks."""

from __future__ import annotations

import base64
import errno
import io
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pegboard import ImageContent, TextContent, ToolResult

from . import _safeio
from ._common import PathError, config_of, opened_as_checked
from ._config import FsConfig
from ._models import ReadInput
from ._text import SNIFF_BYTES, Window, plain_utf8, read_window, sniff, whole_text_numbered, window_of_text
from ._tracking import tracker

if TYPE_CHECKING:
    from pegboard import ToolContext

__all__ = ["read"]

# A file this small is read whole on the event loop: handing it to a worker
# thread and back costs ten times what reading it does, and the path was
# resolved and opened on the loop already, so a disk that hangs would have
# hung there first.
INLINE_BYTES = 64 * 1024

# Looked up once: an attribute of a pydantic model's class goes through its
# metaclass's __getattr__ hook, which costs a tenth of making the result.
_text_result = ToolResult.text


async def read(args: ReadInput, ctx: ToolContext) -> ToolResult:
    # (opened_as_checked's common case, without its call)
    real = ctx.resolved_str(args.file_path)
    if real is None:
        try:
            real = opened_as_checked(ctx, args.file_path)
        except PathError as exc:
            return ToolResult.error(str(exc))
    try:
        # left non-blocking: a small file is read whole at once (_small_file), a large one made blocking below
        fd, st = _safeio.open_read_stat(real, keep_nonblocking=True)
    except OSError as exc:
        return ToolResult.error(_open_failed(real, exc, ctx))
    try:
        data = _small_file(fd, st.st_size)
    except OSError as exc:
        os.close(fd)
        return ToolResult.error(f"Cannot read {real}: {exc.strerror or exc}. Nothing was read.")
    if data is not None:
        os.close(fd)
        small = _small_text(args, ctx, real, data, st.st_size)
        # else in memory: every kind below reads it as a file, with no system call
        result = small if small is not None else _read_file(args, ctx, real, io.BytesIO(data), st)
    else:
        # file work is blocking; reading a large file must not stall other calls of the batch
        import anyio

        try:
            os.set_blocking(fd, True)
        except OSError as exc:
            os.close(fd)
            return ToolResult.error(f"Cannot read {real}: {exc.strerror or exc}. Nothing was read.")
        f = os.fdopen(fd, "rb")
        try:
            result = await anyio.to_thread.run_sync(_read_file, args, ctx, real, f, st)
        finally:
            f.close()
    reads = tracker(ctx.state)
    # recorded here, on the event loop: calls of one batch run their threads side by side
    notes = reads.changes(skip=real) if result.is_error else reads.shown(real, st)
    return result.with_text_appended("\n".join(notes)) if notes else result  # as finish does


def _small_file(fd: int, size: int) -> bytes | None:
    """The whole file when it holds at most INLINE_BYTES (one read when its
    size is what fstat said); None, the fd back at its start, when it holds more."""
    if size > INLINE_BYTES:
        return None
    got = _safeio.read_nonblocking(fd, size + 1)
    if len(got) == size:
        return got  # a read of a regular file returns less than asked for only at its end
    # it changed size since fstat (or, like /proc, has no size): read on to its end or the limit
    parts, total = [got], len(got)
    while got and total <= INLINE_BYTES:
        got = _safeio.read_nonblocking(fd, INLINE_BYTES + 1 - total)
        parts.append(got)
        total += len(got)
    if total > INLINE_BYTES:
        os.lseek(fd, 0, os.SEEK_SET)
        return None
    return b"".join(parts)


def _open_failed(real: str, exc: OSError, ctx: ToolContext) -> str:
    """What a failed open means, for the model: worded from a stat of the
    path, as a Read that looked before it opened would word it."""
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return _missing(Path(real), ctx)
    except OSError as err:
        return f"Cannot read {real}: {err.strerror}."
    if stat.S_ISDIR(st.st_mode) or (isinstance(exc, _safeio.NotRegular) and exc.errno == errno.EISDIR):
        return (f"{real} is a directory, not a file. Use Glob (e.g. pattern '*' with this path) "
                f"to list it, then Read a file in it.")
    if isinstance(exc, _safeio.NotRegular):
        return f"{real} is not a regular file (a device, socket or fifo); Read only shows files."
    if isinstance(exc, PermissionError):
        return f"Permission denied by the operating system reading {real}."
    if isinstance(exc, FileNotFoundError):
        return _missing(Path(real), ctx)
    return f"Cannot open {real}: {exc.strerror or exc}. Nothing was read."


def _read_file(args: ReadInput, ctx: ToolContext, real: str, f: BinaryIO, st: os.stat_result) -> ToolResult:
    """The open file ``f`` (``real``, as fstat found it) shown by its kind."""
    cfg = config_of(ctx)
    head = f.read(SNIFF_BYTES)
    kind = sniff(head)
    if kind.kind == "text" and os.path.splitext(real)[1].lower() == ".ipynb":
        from ._notebook import render_notebook

        return render_notebook(f, st.st_size, cfg, allow_large=args.allow_large)
    if kind.kind == "empty":
        return ToolResult.text(f"{real} exists but is empty (0 bytes).")
    if kind.kind == "binary":
        return ToolResult.error(
            f"{real} is a binary file ({st.st_size:,} bytes) that is not text, an image, a PDF or a notebook, "
            f"so Read cannot show it. Inspect it with a shell tool (e.g. `file`, `xxd | head`) if needed."
        )
    if kind.kind == "image":
        return _image(f, real, kind.mime_type, st.st_size, cfg.max_image_bytes)
    if kind.kind == "pdf":
        from ._pdf import render_pdf

        return render_pdf(f, Path(real), args.pages, cfg.max_pdf_pages)
    return _text(f, real, kind.encoding, st.st_size, args, ctx)


def _small_text(args: ReadInput, ctx: ToolContext, real: str, data: bytes, size: int) -> ToolResult | None:
    """A small file's Read from its first line when it is plain UTF-8 text,
    shown as ``_read_file`` shows it (sniffing and showing it take one
    decode, with no file object); None for anything else, which
    ``_read_file`` reads."""
    # (a superset of the names _read_file renders as notebooks: those go there)
    if (args.offset is not None and args.offset != 1) or real[-6:].lower() == ".ipynb":
        return None
    text = plain_utf8(data)
    if text is None:
        return None
    cfg = ctx.config if type(ctx.config) is FsConfig else config_of(ctx)
    # (what _refusal needs before it refuses anything, checked without its call)
    if args.pages is not None or size > cfg.max_file_bytes:
        refused = _refusal(real, size, args, cfg)
        if refused is not None:
            return refused
    limit, cap = _bounds(args, ctx, cfg)
    whole = whole_text_numbered(text, limit=limit, max_line_chars=cfg.max_line_chars, max_output_chars=cap)
    if whole is not None:
        return _text_result(whole)  # as _shown shows a window with nothing left out
    win = window_of_text(text, limit=limit, max_line_chars=cfg.max_line_chars, max_output_chars=cap)
    return _shown(win, real, 1, cap, args, cfg)


def _refusal(real: str, size: int, args: ReadInput, cfg: FsConfig) -> ToolResult | None:
    if args.pages is not None:
        return ToolResult.error(f"pages applies to PDFs only; {real} is a text file. Use offset and limit.")
    if size > cfg.max_file_bytes and args.offset is None and args.limit is None and not args.allow_large:
        return ToolResult.error(
            f"{real} is {size:,} bytes, more than the {cfg.max_file_bytes:,} a whole-file Read shows. "
            f"Read a part with offset and limit (e.g. offset=1, limit={cfg.max_lines}), search it with Grep, "
            f"or pass allow_large=true if you really need all of it."
        )
    return None


def _bounds(args: ReadInput, ctx: ToolContext, cfg: FsConfig) -> tuple[int, int]:
    """How many lines a text Read shows at most, and in how many characters."""
    if args.allow_large:
        limit, cap = args.limit or 10**12, cfg.large_output_chars
    else:
        limit, cap = args.limit or cfg.max_lines, cfg.max_output_chars
    if not ctx.uncapped:
        # The core spills results over its cap into a file to be Read again, which for
        # Read itself would only go in circles: stop at a line boundary below it instead.
        # (comparisons, not min and max: those two builtins cost a third of this function)
        below = ctx.result_limit - 600
        below = below if below > 1000 else 1000
        cap = cap if cap < below else below
    return limit, cap


def _text(f: BinaryIO, real: str, encoding: str, size: int, args: ReadInput, ctx: ToolContext) -> ToolResult:
    cfg = config_of(ctx)
    refused = _refusal(real, size, args, cfg)
    if refused is not None:
        return refused
    offset = args.offset or 1
    limit, cap = _bounds(args, ctx, cfg)
    win = read_window(f, encoding, offset=offset, limit=limit,
                      max_line_chars=cfg.max_line_chars, max_output_chars=cap)
    return _shown(win, real, offset, cap, args, cfg)


def _shown(win: Window, real: str, offset: int, cap: int, args: ReadInput, cfg: FsConfig) -> ToolResult:
    """The result of a text Read that showed ``win``."""
    if win.lines_in_file is not None:
        return ToolResult.error(
            f"{real} has only {win.lines_in_file:,} lines; offset {offset:,} is past the end. "
            f"Use an offset of at most {max(win.lines_in_file, 1):,}."
        )
    if not (win.capped or win.more or win.cut_lines):
        return _text_result(win.text)  # the whole file, nothing to add
    parts = [win.text]
    if win.capped:
        parts.append(f"[Output stopped at line {win.last:,} to stay under {cap:,} characters; "
                     f"continue with offset={win.last + 1}.]")
    elif win.more and args.limit is None:
        parts.append(f"[Showed lines {win.first:,}-{win.last:,}; the file goes on. "
                     f"Continue with offset={win.last + 1}, or pass limit to read more at once.]")
    if win.cut_lines:
        parts.append(f"[{win.cut_lines} line(s) longer than {cfg.max_line_chars:,} characters were cut; "
                     f"use Grep or a shell tool to see them whole.]")
    return ToolResult.text("\n".join(p for p in parts if p))


def _image(f: BinaryIO, real: str, mime: str, size: int, limit: int) -> ToolResult:
    if size > limit:
        return ToolResult.error(f"{real} is a {size:,}-byte image, over the {limit:,}-byte limit for Read. "
                                f"Shrink it first (e.g. with ImageMagick's `convert -resize`).")
    f.seek(0)
    data = f.read(limit + 1)
    return ToolResult(content=[
        ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime),
        TextContent(text=f"{real} ({mime}, {size:,} bytes)"),
    ])


def _missing(real: Path, ctx: ToolContext) -> str:
    hint = ""
    try:
        names = os.listdir(real.parent)
    except OSError:
        names = []
        hint = f" Its folder {real.parent} does not exist either."
    import difflib  # only for a missing file's look-alikes

    close = difflib.get_close_matches(real.name, names, n=3, cutoff=0.6)
    if close:
        hint = " Did you mean: " + ", ".join(str(real.parent / n) for n in close) + "?"
    return f"{real} does not exist.{hint} The working directory is {ctx.session.root}."

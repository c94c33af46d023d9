"""PDF pages as text. pypdf is imported here only, when a PDF is actually read."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from pegboard import ToolResult

__all__ = ["parse_pages", "render_pdf"]


def parse_pages(spec: str, max_pages: int) -> list[int]:
    """``"1-5"``, ``"3"``, ``"1,4-6"`` → 1-based page numbers; ValueError says what is wrong."""
    pages: list[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"{spec!r} is not a page range; write e.g. \"1-5\" or \"3\"")
        lo, hi = int(first), int(last) if dash else int(first)
        if lo < 1 or hi < lo:
            raise ValueError(f"{part!r}: pages count from 1 and a range goes upward")
        pages.extend(range(lo, hi + 1))
        if len(pages) > max_pages:
            raise ValueError(f"{spec!r} asks for more than {max_pages} pages; read at most {max_pages} per call")
    if not pages:
        raise ValueError("no pages given")
    return list(dict.fromkeys(pages))


def render_pdf(f: BinaryIO, real: Path, pages_spec: str | None, max_pages: int) -> ToolResult:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(f)
        total = len(reader.pages)
    except (PdfReadError, ValueError, OSError) as exc:
        return ToolResult.error(f"{real} looks like a PDF but could not be parsed ({exc}).")
    try:
        wanted = parse_pages(pages_spec, max_pages) if pages_spec else list(range(1, min(total, max_pages) + 1))
    except ValueError as exc:
        return ToolResult.error(f"pages: {exc}.")
    beyond = [p for p in wanted if p > total]
    if beyond:
        return ToolResult.error(f"{real} has {total} page(s); page {beyond[0]} does not exist.")
    out: list[str] = [f"{real}: PDF, {total} page(s)"]
    for number in wanted:
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except Exception as exc:  # pypdf raises many types on damaged pages; one bad page should not sink the rest
            text = f"[page could not be extracted: {type(exc).__name__}]"
        out.append(f"--- page {number} ---\n{text.strip() or '[no extractable text on this page (scanned image?)]'}")
    if not pages_spec and total > max_pages:
        out.append(f"[Showed pages 1-{max_pages} of {total}; pass pages=\"{max_pages + 1}-"
                   f"{min(total, 2 * max_pages)}\" for the next ones.]")
    return ToolResult.text("\n\n".join(out))

"""Jupyter notebooks: shown as cells with outputs; edited one cell at a time."""

from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any, BinaryIO

from pegboard import Content, ImageContent, TextContent, ToolResult

from ._models import NotebookEditInput

if TYPE_CHECKING:
    from pegboard import ToolContext

    from ._config import FsConfig

__all__ = ["apply_edit", "notebook_edit", "render_notebook"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_NOTEBOOK = 64 * 1024 * 1024
_MAX_OUTPUT_CHARS = 10_000  # per output: a cell printing a million lines should not drown the rest


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _cell_id(cell: dict[str, Any], index: int) -> str:
    # nbformat < 4.5 has no ids; cell-N (0-based) is what the model can use instead
    return str(cell.get("id") or f"cell-{index}")


def load(data: bytes) -> dict[str, Any]:
    nb = json.loads(data.decode("utf-8-sig"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no 'cells' list)")
    return nb


def render_notebook(f: BinaryIO, size: int, cfg: FsConfig, *, allow_large: bool) -> ToolResult:
    if size > _MAX_NOTEBOOK and not allow_large:
        return ToolResult.error(f"The notebook is {size:,} bytes; pass allow_large=true to read it anyway.")
    f.seek(0)
    try:
        nb = load(f.read())
    except (ValueError, UnicodeDecodeError) as exc:
        return ToolResult.error(f"This .ipynb file is not a valid notebook ({exc}). Read it as text with offset=1.")
    lang = nb.get("metadata", {}).get("language_info", {}).get("name", "python")
    content: list[Content] = []
    text: list[str] = []
    for index, cell in enumerate(nb["cells"]):
        kind = cell.get("cell_type", "code")
        text.append(f'<cell id="{_cell_id(cell, index)}" type="{kind}"'
                    + (f' language="{lang}"' if kind == "code" else "") + ">")
        text.append(_source(cell))
        for out in cell.get("outputs", []) or []:
            shown, images = _output(out)
            if shown:
                text.append(f"<output>\n{shown}\n</output>")
            for mime, data in images:
                content.append(TextContent(text="\n".join(text)))
                text = []
                content.append(ImageContent(data=data, mime_type=mime))
        text.append("</cell>")
    if text:
        content.append(TextContent(text="\n".join(text)))
    if not nb["cells"]:
        content = [TextContent(text="The notebook has no cells.")]
    return ToolResult(content=content)


def _output(out: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    kind = out.get("output_type")
    images: list[tuple[str, str]] = []
    if kind == "stream":
        body = _join(out.get("text", ""))
    elif kind == "error":
        body = _ANSI.sub("", "\n".join(out.get("traceback", []) or [f"{out.get('ename')}: {out.get('evalue')}"]))
    elif kind in ("execute_result", "display_data"):
        data = out.get("data", {})
        for mime in ("image/png", "image/jpeg", "image/gif"):
            if mime in data:
                images.append((mime, _join(data[mime]).replace("\n", "")))
        body = _join(data.get("text/plain", "")) if "text/plain" in data else ""
    else:
        body = ""
    if len(body) > _MAX_OUTPUT_CHARS:
        body = body[:_MAX_OUTPUT_CHARS] + f"\n[output cut at {_MAX_OUTPUT_CHARS:,} characters]"
    return body, images


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# --- editing -------------------------------------------------------------------


def _find(nb: dict[str, Any], cell_id: str) -> int | None:
    for index, cell in enumerate(nb["cells"]):
        if _cell_id(cell, index) == cell_id:
            return index
    if cell_id.isdigit() and int(cell_id) < len(nb["cells"]):
        return int(cell_id)  # models often pass a plain index
    return None


def _has_ids(nb: dict[str, Any]) -> bool:
    return (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5)


def _lines(source: str) -> list[str]:
    # nbformat stores source as a list of lines, each keeping its newline
    return source.splitlines(keepends=True)


def apply_edit(nb: dict[str, Any], args: NotebookEditInput) -> str:
    """Change ``nb`` in place; returns what was done, or raises ValueError for the model."""
    cells: list[dict[str, Any]] = nb["cells"]
    index = _find(nb, args.cell_id) if args.cell_id is not None else None
    if args.cell_id is not None and index is None:
        known = ", ".join(_cell_id(c, i) for i, c in enumerate(cells[:20]))
        raise ValueError(f"no cell {args.cell_id!r} in the notebook; cells are: {known or '(none)'}")
    if args.edit_mode == "insert":
        if args.cell_type is None:
            raise ValueError("cell_type (code or markdown) is required to insert a cell")
        cell: dict[str, Any] = {"cell_type": args.cell_type, "metadata": {}, "source": _lines(args.new_source)}
        if args.cell_type == "code":
            cell.update(execution_count=None, outputs=[])
        if _has_ids(nb):
            cell["id"] = secrets.token_hex(4)
        at = 0 if index is None else index + 1
        cells.insert(at, cell)
        return f"Inserted a {args.cell_type} cell {_cell_id(cell, at)} at position {at}"
    if index is None:
        raise ValueError(f"cell_id is required to {args.edit_mode} a cell")
    if args.edit_mode == "delete":
        gone = cells.pop(index)
        return f"Deleted cell {_cell_id(gone, index)}"
    cell = cells[index]
    cell["source"] = _lines(args.new_source)
    if args.cell_type is not None and args.cell_type != cell.get("cell_type"):
        cell["cell_type"] = args.cell_type
        if args.cell_type == "markdown":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        else:
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    if cell.get("cell_type") == "code":
        # the old outputs belong to the old code
        cell["outputs"] = []
        cell["execution_count"] = None
    return f"Replaced the source of cell {_cell_id(cell, index)}"


def dump(nb: dict[str, Any]) -> bytes:
    # Jupyter's own layout (indent 1, a trailing newline) keeps diffs small
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


async def notebook_edit(args: NotebookEditInput, ctx: ToolContext) -> ToolResult:
    from ._write import write_checked

    if not args.notebook_path.endswith(".ipynb"):
        return ToolResult.error(f"{args.notebook_path} is not a .ipynb file; use Edit for other files.")

    def change(old: bytes | None) -> tuple[bytes, str]:
        if old is None:
            raise ValueError("the notebook does not exist; create it with Write first")
        try:
            nb = load(old)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not a valid notebook ({exc})") from None
        done = apply_edit(nb, args)
        return dump(nb), done

    return await write_checked(ctx, args.notebook_path, change, must_exist=True)

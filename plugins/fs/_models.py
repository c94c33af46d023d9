"""Input models of the fs tools. Names follow Claude Code's, since models know them.

Read's (and the base of them all) is in ``_models_read``: a decision on a Read
defines that one only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._models_read import ReadInput, _Input

__all__ = [
    "EditInput",
    "GlobInput",
    "GrepInput",
    "NotebookEditInput",
    "ReadInput",
    "WriteInput",
]


class WriteInput(_Input):
    file_path: str = Field(description="Absolute path of the file to write")
    content: str = Field(description="The whole new content of the file")


class EditInput(_Input):
    file_path: str = Field(description="Absolute path of the file to change")
    old_string: str = Field(description="The exact text to replace")
    new_string: str = Field(description="The text to put in its place (must differ from old_string)")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one")


class NotebookEditInput(_Input):
    notebook_path: str = Field(description="Absolute path of the .ipynb file")
    new_source: str = Field(description="The cell's new source (give \"\" for delete)")
    cell_id: str | None = Field(
        default=None, description="The cell to change; with insert, the new cell goes after it (first when omitted)"
    )
    cell_type: Literal["code", "markdown"] | None = Field(default=None, description="Required with insert")
    edit_mode: Literal["replace", "insert", "delete"] = Field(default="replace")


class GlobInput(_Input):
    pattern: str = Field(description='Glob pattern, e.g. "**/*.py" or "src/**/test_*.ts"')
    path: str | None = Field(default=None, description="Directory to search in (default: the working directory)")


class GrepInput(_Input):
    pattern: str = Field(description="Regular expression to search for")
    path: str | None = Field(default=None, description="File or directory to search (default: the working directory)")
    glob: str | None = Field(default=None, description='Only files matching this glob, e.g. "*.py" or "*.{ts,tsx}"')
    output_mode: Literal["content", "files_with_matches", "count"] = Field(default="files_with_matches")
    before: int | None = Field(default=None, alias="-B", ge=0, description="Lines of context before each match (content)")
    after: int | None = Field(default=None, alias="-A", ge=0, description="Lines of context after each match (content)")
    context: int | None = Field(default=None, alias="-C", ge=0, description="Lines of context around each match (content)")
    line_numbers: bool = Field(default=True, alias="-n", description="Show line numbers (content)")
    ignore_case: bool = Field(default=False, alias="-i", description="Case-insensitive search")
    type: str | None = Field(default=None, description='File type, e.g. "py", "js", "rust" (ripgrep type names)')
    multiline: bool = Field(default=False, description="Let . match newlines and patterns span lines")
    head_limit: int | None = Field(default=None, ge=0, description="Show at most this many lines/entries (0: no limit)")

"""The memory tool's input: the commands and parameters of Anthropic's memory
tool (``memory_20250818``), one flat object, so that a model sending that
tool's calls and one given it as a function send the same. Pydantic only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["COMMANDS", "Command", "MemoryInput", "PARAMETERS"]

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]
COMMANDS: tuple[Command, ...] = ("view", "create", "str_replace", "insert", "delete", "rename")
# What each command takes: (required, optional).
PARAMETERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str", "new_str"), ()),
    "insert": (("path", "insert_line", "insert_text"), ()),
    "delete": (("path",), ()),
    "rename": (("old_path", "new_path"), ()),
}


class MemoryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: Command = Field(description=(
        "view: show a file with line numbers, or list a folder; create: make a new file; str_replace: replace "
        "text that occurs once in a file; insert: insert text after a line; delete: delete a file or folder; "
        "rename: rename or move a file or folder."))
    path: str | None = Field(None, description=(
        "The file or folder, under /memories (/memories/notes.md). For view, create, str_replace, insert, "
        "delete."))
    view_range: list[int] | None = Field(None, min_length=2, max_length=2, description=(
        "view of a file: [first, last] line to show, from 1; last -1 is the end of the file."))
    file_text: str | None = Field(None, description="create: the new file's content.")
    old_str: str | None = Field(None, description="str_replace: the text to replace; it must occur exactly once.")
    new_str: str | None = Field(None, description="str_replace: the text to put in its place (may be empty).")
    insert_line: int | None = Field(None, description=(
        "insert: the line after which the text goes; 0 puts it at the top."))
    insert_text: str | None = Field(None, description="insert: the text to insert.")
    old_path: str | None = Field(None, description="rename: the file or folder to rename, under /memories.")
    new_path: str | None = Field(None, description="rename: its new path, under /memories; nothing may be there.")

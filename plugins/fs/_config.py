"""``[plugins.fs]``: the operator's knobs. Light: imported by the entry point."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from pegboard import UserScope

__all__ = ["FsConfig"]


class FsConfig(BaseModel):
    """Limits keep a single Read from flooding the model's context."""

    model_config = ConfigDict(extra="forbid")

    max_lines: int = Field(default=2000, ge=1, description="lines Read shows when no limit is given")
    max_line_chars: int = Field(default=2000, ge=80, description="longer lines are cut, and the cut is said")
    max_file_bytes: int = Field(
        default=256 * 1024, ge=1024, description="a whole-file Read of a bigger text file needs offset/limit or allow_large"
    )
    max_output_chars: int = Field(default=200_000, ge=1000, description="Read's text output stops here")
    large_output_chars: int = Field(default=2_000_000, ge=1000, description="the same with allow_large")
    max_image_bytes: int = Field(default=10 * 1024 * 1024, ge=1024, description="images larger than this are refused")
    max_pdf_pages: int = Field(default=20, ge=1, le=100, description="pages per Read of a PDF")
    search_backend: Literal["auto", "rg", "python"] = Field(
        default="auto", description="Grep/Glob engine: ripgrep when installed (auto), or force one"
    )
    rg_path: Annotated[str | None, UserScope("it chooses the program Grep and Glob run")] = Field(
        default=None, description="ripgrep binary; default: 'rg' on PATH")
    grep_head_limit: int = Field(default=250, ge=1, description="default cap on Grep output lines / files")
    glob_limit: int = Field(default=1000, ge=1, description="Glob returns at most this many paths")
    checkpoints: bool = Field(default=True, description="keep the previous content before each write (rewind)")
    max_checkpoint_bytes: int = Field(default=20 * 1024 * 1024, ge=0, description="bigger files are not checkpointed")

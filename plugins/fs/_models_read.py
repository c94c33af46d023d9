"""Read's input model and the base of every fs tool's, apart from the other
tools' (``_models``, which names them all): a decision on a Read, the call a
start-up most often decides, defines only this one."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ReadInput"]


class _Input(BaseModel):
    # Built when first validated (or its schema asked for), not at import:
    # a start-up that never calls the tool never builds its validator.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class ReadInput(_Input):
    file_path: str = Field(description="Absolute path of the file to read")
    offset: int | None = Field(default=None, ge=1, description="Line number to start from (1 is the first line)")
    limit: int | None = Field(default=None, ge=1, description="Number of lines to read")
    pages: str | None = Field(default=None, description='PDF only: pages to read, e.g. "1-5" or "3" (at most 20)')
    allow_large: bool = Field(default=False, description="Read past the usual size limits")

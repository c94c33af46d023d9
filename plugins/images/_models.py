"""ShowImage's input. Pydantic only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_INLINE_CHARS", "ShowImageInput"]

# Inline base64 of an image to convert (a TIFF is often larger than the PNG
# it becomes), with room for line breaks: 24 MiB of bytes.
MAX_INLINE_CHARS = 24 * 1024 * 1024 * 4 // 3 + 1024 * 1024


class ShowImageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    from_scratchpad: str | None = Field(
        default=None, description="The name of a scratchpad entry holding the image base64-encoded (saved there "
                                  "by a command's output with the scratchpad parameter). Give this or base64.")
    base64: str | None = Field(
        default=None, max_length=MAX_INLINE_CHARS,
        description="The image itself, base64-encoded (a data: URL also works). Give this or from_scratchpad; "
                    "prefer the scratchpad for anything but a small image.")

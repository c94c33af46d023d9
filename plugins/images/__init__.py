"""The images plugin: ShowImage shows the model image bytes the agent already has.

Tool: ``ShowImage``, from a scratchpad entry (``from_scratchpad``: the
entry holds the image base64-encoded, as ``... | base64 -w0`` with the
``scratchpad`` parameter saves it) or inline (``base64``), exactly one. PNG,
JPEG, GIF and WebP pass through; other raster formats (TIFF, BMP, ICO, ...)
are converted to PNG with Pillow (the ``images`` extra, imported only for a
conversion). Images over ``MAX_IMAGE_BYTES`` are refused with how to shrink
them. The result's image part reaches the model through every converter
(``to_anthropic``, ``to_openai_chat``, ``to_responses``) and ``pegboard
serve``. See docs/plugins/images.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pegboard import Tool, hookimpl

if TYPE_CHECKING:
    from pegboard import Check

__all__ = ["MAX_IMAGE_BYTES", "PEGBOARD_API"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("ShowImage",)

MAX_IMAGE_BYTES = 5 * 1024 * 1024 * 3 // 4
"""The most bytes an image ShowImage sends may have: 3.75 MiB, whose base64
is the 5 MiB per image the Messages API takes (the OpenAI APIs take more)."""

_P = "pegboard.plugins.images"


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    # Read level and read-only: it shows the model bytes the agent already
    # holds (in its scratchpad or its own call), reaching no file, command
    # or network; plan mode's reading is where looking at a picture helps.
    # Plain function handler: a conversion is CPU work, run in a thread.
    register(Tool(name="ShowImage", handler=f"{_P}._handlers:show_image", input_model=f"{_P}._models:ShowImageInput",
                  read_only=True, loading="always", permission="read", timeout_s=60))


@hookimpl
def pegboard_doctor() -> list[Check]:
    from importlib import metadata

    from pegboard import Check  # a dataclass: made when doctor runs, not at every start

    try:
        version = metadata.version("pillow")
    except metadata.PackageNotFoundError:
        return [Check("conversion", "ok", "Pillow is not installed: ShowImage takes PNG, JPEG, GIF and WebP; "
                                          "pip install 'pegboard[images]' converts TIFF, BMP and the rest to PNG")]
    return [Check("conversion", "ok", f"Pillow {version}: ShowImage converts TIFF, BMP and other raster "
                                      "formats to PNG")]

"""ShowImage's handler: the bytes from the scratchpad or the call, as an image part."""

from __future__ import annotations

from pegboard import ImageContent, TextContent, ToolContext, ToolResult

from ._convert import NotShown, decode_base64, image_for_model
from ._models import ShowImageInput

__all__ = ["show_image"]


def show_image(args: ShowImageInput, ctx: ToolContext) -> ToolResult:
    if (args.from_scratchpad is None) == (args.base64 is None):
        return ToolResult.error("Give exactly one of from_scratchpad (the name of a scratchpad entry holding the "
                                "image base64-encoded) and base64 (the image itself, base64-encoded).")
    if args.from_scratchpad is not None:
        pad = ctx.session.scratchpad
        text = pad.get(args.from_scratchpad)
        if text is None:
            return ToolResult.error(f"No scratchpad entry {args.from_scratchpad!r}. Entries: "
                                    f"{', '.join(sorted(pad)) or 'none'}.")
        source = f"scratchpad entry {args.from_scratchpad!r}"
    else:
        assert args.base64 is not None
        text, source = args.base64, "the base64 given"
    try:
        shown = image_for_model(decode_base64(text, source), source)
    except NotShown as refusal:
        why = str(refusal)
        return ToolResult.error(why[:1].upper() + why[1:])
    return ToolResult(content=[ImageContent(data=shown.data, mime_type=shown.mime_type),
                               TextContent(text=f"Shown: {shown.note} image, {shown.size:,} bytes, from {source}.")])

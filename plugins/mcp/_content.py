"""MCP results as pegboard ToolResults, faithfully.

Duck-typed on the SDK's wire models (``.type``, ``.text``, ...) so that this
module needs no ``mcp`` import of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pegboard import Content, ImageContent, ResourceContent, TextContent, ToolResult

__all__ = ["resource_contents", "to_tool_result"]


def _annotations(block: Any) -> dict[str, Any] | None:
    found = getattr(block, "annotations", None)
    if found is None:
        return None
    dumped = found.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(found, "model_dump") else found
    return dumped or None


def _block(block: Any) -> Content:
    made = _plain_block(block)
    notes = _annotations(block)
    return made.model_copy(update={"annotations": notes}) if notes else made


def _plain_block(block: Any) -> Content:
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(text=block.text)
    if kind == "image":
        return ImageContent(data=block.data, mime_type=block.mime_type)
    if kind == "resource":
        res = block.resource
        return ResourceContent(uri=str(res.uri), mime_type=getattr(res, "mime_type", None),
                               text=getattr(res, "text", None), blob=getattr(res, "blob", None))
    if kind == "resource_link":
        parts = [f"[resource link] {block.uri}"]
        if getattr(block, "name", None):
            parts.append(f"name: {block.name}")
        if getattr(block, "mime_type", None):
            parts.append(f"type: {block.mime_type}")
        if getattr(block, "description", None):
            parts.append(f"description: {block.description}")
        parts.append("(read it with ReadMcpResourceTool)")
        return TextContent(text="\n".join(parts))
    if kind == "audio":
        # pegboard has no audio content: keep the bytes as an embedded blob
        # rather than drop them, so a host that understands audio can play it.
        return ResourceContent(uri="audio:inline", mime_type=block.mime_type, blob=block.data)
    return TextContent(text=f"[unsupported MCP content of type {kind!r}]")


def to_tool_result(result: Any) -> ToolResult:
    """A CallToolResult: every block, the structured content and the error flag."""
    content = [_block(b) for b in (getattr(result, "content", None) or [])]
    structured = getattr(result, "structured_content", None)
    if structured is None:
        # pegboard serve sends a tool's structured data in _meta (its tools declare no output schema).
        meta = getattr(result, "meta", None) or {}
        structured = meta.get("pegboard/structured") if isinstance(meta, dict) else None
    if not content and structured is not None:
        # The model reads content; a server that only sent structured data
        # would otherwise look like it said nothing.
        content = [TextContent(text=json.dumps(structured, indent=2, ensure_ascii=False))]
    return ToolResult(content=content, structured_content=structured, is_error=bool(getattr(result, "is_error", False)))


def resource_contents(contents: Iterable[Any]) -> list[Content]:
    """ReadResourceResult.contents: text as text, images as images, other blobs embedded."""
    out: list[Content] = []
    for item in contents:
        uri = str(item.uri)
        mime = getattr(item, "mime_type", None)
        text = getattr(item, "text", None)
        if text is not None:
            out.append(TextContent(text=text))
        elif mime and mime.startswith("image/"):
            out.append(ImageContent(data=item.blob, mime_type=mime))
        else:
            out.append(ResourceContent(uri=uri, mime_type=mime, blob=getattr(item, "blob", None)))
    return out

"""A tool result in the wire formats of the model APIs: an Anthropic
``tool_result`` block, OpenAI Chat Completions messages, an OpenAI Responses
``function_call_output`` item.

Plain dicts shaped as the official SDKs' typed params (the tests check them
against ``anthropic`` and ``openai`` types); nothing here imports an SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tools import ToolResult

__all__ = ["anthropic_result", "openai_chat_messages", "openai_chat_result", "parts_of", "responses_result",
           "unsupported_image"]

# What the Messages API takes as an image source; other types are described instead.
ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
OPENAI_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _blob_note(uri: str, mime_type: str | None, data: str) -> str:
    size = len(data) * 3 // 4
    return f"[resource {uri} ({mime_type or 'binary'}, about {size:,} bytes) is not shown: this API cannot take it]"


def parts_of(result: ToolResult) -> list[tuple[str, Any]]:
    """The result as ("text", str), ("image", (mime, base64)) and
    ("pdf", (uri, base64)) parts, resources unwrapped; structured content
    as JSON text when there is nothing else to read."""
    parts: list[tuple[str, Any]] = []
    for item in result.content:
        if item.type == "text":
            parts.append(("text", item.text))
        elif item.type == "image":
            parts.append(("image", (item.mime_type, item.data)))
        elif item.text is not None:
            parts.append(("text", f"[resource {item.uri}]\n{item.text}"))
        elif item.blob is not None and (item.mime_type or "").startswith("image/"):
            parts.append(("image", (item.mime_type, item.blob)))
        elif item.blob is not None and item.mime_type == "application/pdf":
            parts.append(("pdf", (item.uri, item.blob)))
        else:
            parts.append(("text", _blob_note(item.uri, item.mime_type, item.blob or "")))
    if result.structured_content is not None and not any(kind == "text" for kind, _ in parts):
        parts.append(("text", json.dumps(result.structured_content, ensure_ascii=False, default=str)))
    return parts


def unsupported_image(mime: str) -> str:
    return f"[an image of type {mime} is not shown: this API takes JPEG, PNG, GIF and WebP]"


# --- Anthropic Messages API ------------------------------------------------------------


def anthropic_result(result: ToolResult, tool_use_id: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for kind, value in parts_of(result):
        if kind == "text":
            if value:  # the API refuses empty text blocks
                blocks.append({"type": "text", "text": value})
        elif kind == "image":
            mime, data = value
            if mime in ANTHROPIC_IMAGE_TYPES:
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
            else:
                blocks.append({"type": "text", "text": unsupported_image(mime)})
        else:
            uri, data = value
            blocks.append({"type": "document", "title": uri,
                           "source": {"type": "base64", "media_type": "application/pdf", "data": data}})
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if blocks:
        block["content"] = blocks
    block["is_error"] = result.is_error
    return block


# --- OpenAI Chat Completions -------------------------------------------------------------


def _data_url(mime: str, data: str) -> str:
    return f"data:{mime};base64,{data}"


def openai_chat_result(result: ToolResult, tool_call_id: str) -> list[dict[str, Any]]:
    """The ``tool`` message, then (only when the result has images) a
    ``user`` message carrying them: a Chat tool message takes text only."""
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for kind, value in parts_of(result):
        if kind == "text":
            texts.append(value)
        elif kind == "image" and value[0] in OPENAI_IMAGE_TYPES:
            media.append({"type": "image_url", "image_url": {"url": _data_url(*value)}})
        elif kind == "image":
            texts.append(unsupported_image(value[0]))
        else:
            uri, data = value
            media.append({"type": "file", "file": {"filename": uri.rsplit("/", 1)[-1] or "document.pdf",
                                                   "file_data": _data_url("application/pdf", data)}})
    if media:
        texts.append(f"[{len(media)} attachment(s) of this result follow in the next message]")
    tool_message = {"role": "tool", "tool_call_id": tool_call_id, "content": "\n".join(texts) or "(no output)"}
    if not media:
        return [tool_message]
    intro = {"type": "text", "text": f"Attachments of the result of tool call {tool_call_id}:"}
    return [tool_message, {"role": "user", "content": [intro, *media]}]


def openai_chat_messages(results: Iterable[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
    """The messages for all the results of one assistant turn, in the order
    the API requires: every ``tool`` message first, then the ``user``
    messages carrying images."""
    tools: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    for tool_call_id, result in results:
        first, *rest = openai_chat_result(result, tool_call_id)
        tools.append(first)
        extra.extend(rest)
    return tools + extra


# --- OpenAI Responses API ----------------------------------------------------------------


def responses_result(result: ToolResult, call_id: str) -> dict[str, Any]:
    """A ``function_call_output`` item: a plain string for text alone, else
    a list of ``input_text``, ``input_image`` and ``input_file`` parts."""
    parts = parts_of(result)
    if all(kind == "text" for kind, _ in parts):
        output: Any = "\n".join(value for _, value in parts)
    else:
        output = []
        for kind, value in parts:
            if kind == "text":
                output.append({"type": "input_text", "text": value})
            elif kind == "image" and value[0] in OPENAI_IMAGE_TYPES:
                output.append({"type": "input_image", "image_url": _data_url(*value)})
            elif kind == "image":
                output.append({"type": "input_text", "text": unsupported_image(value[0])})
            else:
                uri, data = value
                output.append({"type": "input_file", "filename": uri.rsplit("/", 1)[-1] or "document.pdf",
                               "file_data": _data_url("application/pdf", data)})
    return {"type": "function_call_output", "call_id": call_id, "output": output}

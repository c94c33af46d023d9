"""A message of the model APIs as readable parts: what the log keeps and the tools search.

A host records messages in whichever API's shape it speaks: Anthropic
Messages (``content`` blocks: text, tool_use, tool_result, image, ...), OpenAI
Chat Completions (``tool_calls``, tool messages, content parts) or OpenAI
Responses input items (``function_call``, ``function_call_output``,
messages with ``input_text`` parts). Each becomes a role and a list of text
parts: the text itself, a tool call as its name and JSON input, a tool result
as its text, and an image or a file as a line saying what it was (its bytes
are never kept). Each part is kept up to ``MAX_PART_CHARS``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_PART_CHARS", "MAX_PARTS", "Message", "message_parts"]

MAX_PART_CHARS = 100_000
"""The most characters of one part (a tool result, a text block) the log keeps; the rest is cut, with a note."""
MAX_PARTS = 64
"""The most parts of one message the log keeps apart; the rest are joined to the last."""

Message = tuple[int, str, list[str]]
"""A message of the log: its index (``#N``, from 1), its role and its parts."""


def message_parts(message: Any) -> tuple[str, list[str]]:
    """(role, parts) for one message in any of the APIs' shapes. ``TypeError``
    or ``ValueError`` saying what was expected for anything else."""
    if hasattr(message, "model_dump") and not isinstance(message, Mapping):
        message = message.model_dump(exclude_none=True)
    if not isinstance(message, Mapping):
        raise TypeError(f"a message is a dict (an Anthropic or OpenAI message, or a Responses item), not "
                        f"{type(message).__name__}")
    kind = message.get("type")
    if kind == "function_call":
        return "assistant", _bounded([_call(message.get("name"), message.get("call_id"), message.get("arguments"))])
    if kind in ("function_call_output", "custom_tool_call_output"):
        return "tool", _bounded([_result(message.get("call_id"), message.get("output"), False)])
    if kind == "reasoning":
        summary = message.get("summary") or []
        texts = [s.get("text", "") for s in summary if isinstance(s, Mapping)]
        return "assistant", _bounded([f"[reasoning] {t}" for t in texts if t])
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise ValueError(f"a message needs a role (user, assistant, system, tool, ...), or a Responses item "
                         f"type; this one has keys {sorted(map(str, message))[:8]}")
    parts = _content(message.get("content"))
    for call in message.get("tool_calls") or []:  # Chat Completions
        function = call.get("function", {}) if isinstance(call, Mapping) else {}
        parts.append(_call(function.get("name"), call.get("id") if isinstance(call, Mapping) else None,
                           function.get("arguments")))
    if role == "tool" and message.get("tool_call_id"):
        body = "\n".join(parts)
        parts = [f"[result of {message['tool_call_id']}]\n{body}"]
    return role[:32], _bounded(parts)


def _bounded(parts: list[str]) -> list[str]:
    if len(parts) > MAX_PARTS:
        parts = [*parts[: MAX_PARTS - 1], "\n\n".join(parts[MAX_PARTS - 1:])]
    out = []
    for part in parts:
        if len(part) > MAX_PART_CHARS:
            part = part[:MAX_PART_CHARS] + f"\n[{len(part) - MAX_PART_CHARS:,} more characters were not recorded]"
        out.append(part)
    return out


def _content(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return [str(content)]
    parts = []
    for block in content:
        text = _block(block)
        if text:
            parts.append(text)
    return parts


def _block(block: Any) -> str:
    if hasattr(block, "model_dump") and not isinstance(block, Mapping):
        block = block.model_dump(exclude_none=True)
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return str(block)
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text"):
        return str(block.get("text") or "")
    if kind == "refusal":
        return f"[refusal] {block.get('refusal', '')}"
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return _call(block.get("name"), block.get("id"), block.get("input"))
    if kind == "tool_result" or kind == "mcp_tool_result":
        return _result(block.get("tool_use_id"), block.get("content"), bool(block.get("is_error")))
    if kind == "thinking":
        return f"[thinking] {block.get('thinking', '')}"
    if kind == "redacted_thinking":
        return ""
    if kind in ("image", "image_url", "input_image"):
        return _image(block)
    if kind in ("document", "file", "input_file"):
        source, file = block.get("source"), block.get("file")
        name = (block.get("title") or block.get("filename")
                or (file.get("filename") if isinstance(file, Mapping) else None)
                or (source.get("media_type") if isinstance(source, Mapping) else None))
        return f"[document{': ' + str(name) if name else ''}]"
    if kind == "input_audio":
        return "[audio]"
    return f"[{kind or 'unknown'} block]"


def _image(block: Mapping[str, Any]) -> str:
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "base64":
            return f"[image: {source.get('media_type', 'image')}, about {_size(source.get('data'))}]"
        if source.get("url"):
            return f"[image: {source['url']}]"
        return "[image]"
    url = block.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        return f"[image: {url[5:].split(';', 1)[0] or 'image'}, about {_size(url.split(',', 1)[-1])}]"
    if isinstance(url, str):
        return f"[image: {url}]"
    return f"[image{': file ' + str(block['file_id']) if block.get('file_id') else ''}]"


def _size(data: Any) -> str:
    count = len(data) * 3 // 4 if isinstance(data, str) else 0
    return f"{count / 1024:,.0f} KB" if count >= 1024 else f"{count} bytes"


def _call(name: Any, call_id: Any, arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    return f"[call {name or '?'}{f' ({call_id})' if call_id else ''}] {shown}"


def _result(call_id: Any, content: Any, is_error: bool) -> str:
    body = "\n".join(_content(content))
    label = f"[{'error ' if is_error else ''}result{f' of {call_id}' if call_id else ''}]"
    return f"{label}\n{body}" if body else label

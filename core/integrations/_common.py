"""What every adapter needs from a session: the tools to offer, and a
result as text and media."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from .._api.decisions import Answer
    from .._engine.session import Session
    from .._engine.streams import CallEvent
    from .._api.tools import ToolResult

__all__ = ["OfferedTool", "data_url", "offered_tools", "require", "result_parts", "run_streamed", "text_of"]


def require(module: str, extra: str) -> None:
    """Import the adapter's framework, or say which extra installs it."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this pegboard adapter needs {module!r}, which is not installed: "
                          f"pip install 'pegboard[{extra}]'") from exc


@dataclass(frozen=True)
class OfferedTool:
    name: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    deferred: bool


def offered_tools(session: Session, *, defer_loading: bool = True) -> list[OfferedTool]:
    """The session's tools with their schemas. ``defer_loading``: every
    deferred tool is listed, flagged, and pegboard's ToolSearch is left out
    (for frameworks with deferred loading of their own); otherwise the
    catalogue as it stands (deferred tools once ToolSearch loaded them)."""
    read_only = {t.name: t.read_only for t in session.offered()}
    return [OfferedTool(t["name"], t["description"], t["input_schema"], read_only.get(t["name"], False),
                        bool(t.get("defer_loading")))
            for t in session.catalogue().to_anthropic(defer_loading=defer_loading) if "input_schema" in t]


def result_parts(result: ToolResult) -> list[tuple[str, Any]]:
    """("text", str), ("image", (mime, bytes)) and ("pdf", (filename, bytes))
    parts, as pegboard's own converters see the result (``_wire``): images of
    types the model APIs do not take, and other binary resources, are
    described in text."""
    from .._api.wire import OPENAI_IMAGE_TYPES, parts_of, unsupported_image

    parts: list[tuple[str, Any]] = []
    for kind, value in parts_of(result):
        if kind == "text":
            parts.append(("text", value))
        elif kind == "image" and value[0] in OPENAI_IMAGE_TYPES:
            parts.append(("image", (value[0], base64.b64decode(value[1]))))
        elif kind == "image":
            parts.append(("text", unsupported_image(value[0])))
        else:
            uri, data = value
            parts.append(("pdf", (uri.rsplit("/", 1)[-1] or "document.pdf", base64.b64decode(data))))
    return parts


def text_of(parts: list[tuple[str, Any]]) -> str:
    """The text parts joined (what a text-only place gets)."""
    return "\n".join(value for kind, value in parts if kind == "text")


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


async def run_streamed(session: Session, name: str, arguments: Any, *, call_id: str | None = None,
                       approval: Answer | None = None, on_output: Callable[[str, CallEvent], Awaitable[None]]
                       ) -> ToolResult:
    """``session.call`` read as a stream: ``on_output(text, event)`` for each
    piece of output as it comes (a framework's way of streaming tool output);
    a failing ``on_output`` stops the streaming, never the call."""
    stream = session.stream(name, arguments, call_id=call_id, approval=approval)
    streaming = True
    async for event in stream:
        text = event.text
        if streaming and text is not None:
            try:
                await on_output(text, event)
            except Exception as exc:  # the framework refused the event: the call goes on without it
                from .._util.errors import report_failure

                report_failure(f"streaming the output of {name} to the framework", exc)
                streaming = False
    assert stream.result is not None
    return stream.result

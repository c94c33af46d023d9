"""What every adapter needs from a session: the tools to offer, and a
result as text and media."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._session import Session
    from .._tools import ToolResult

__all__ = ["OfferedTool", "offered_tools", "require", "result_parts"]


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
    """("text", str) and ("image", (mime, bytes)) parts; other media are
    described in text (see ``_wire``)."""
    parts: list[tuple[str, Any]] = []
    for block in result.to_anthropic("-").get("content", []):
        if block["type"] == "text":
            parts.append(("text", block["text"]))
        elif block["type"] == "image":
            source = block["source"]
            parts.append(("image", (source["media_type"], base64.b64decode(source["data"]))))
        else:
            parts.append(("text", f"[a document ({block.get('title', 'PDF')}) is not shown here]"))
    return parts

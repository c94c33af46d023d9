"""``pegboard call`` at a terminal: a tool's output shown as it comes.

What the call streams (``ctx.output``: a command's lines, a server's
progress) is printed the moment it arrives; the result is printed after,
less the start that was already shown. On a pipe the command prints the
result only, unless ``--stream`` asks for the lines as well.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._engine.session import Session
    from .._api.tools import ToolResult

__all__ = ["call_streaming", "unshown"]


async def call_streaming(session: Session, tool: str, arguments: Any) -> tuple[ToolResult, str]:
    """Run the call, printing each piece of output as it comes; returns the
    result and what was printed (to leave out of the result's text)."""
    shown: list[str] = []
    stream = session.stream(tool, arguments)
    async for event in stream:
        text = event.text
        if text is not None and event.data.get("call_id") == stream.call_id:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            shown.append(text)
    assert stream.result is not None
    return stream.result, "\n".join(shown)


def unshown(text: str, shown: str) -> str:
    """``text`` less the start already printed while the call ran."""
    if shown and text.startswith(shown):
        return text[len(shown):].lstrip("\n")
    return text

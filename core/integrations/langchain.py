"""LangChain tools of a session's tools: ``tools(session)``.

    from pegboard.integrations.langchain import tools

    lc_tools = tools(session)                       # list[BaseTool]
    model = chat_model.bind_tools(lc_tools)
    by_name = {t.name: t for t in lc_tools}
    for call in ai_message.tool_calls:
        messages.append(await by_name[call["name"]].ainvoke(call))   # a ToolMessage

pegboard's permission engine decides every call. LangChain's core has no
approval step of its own, so an ask becomes a pending call
(``approvals="pending"``, the default): the ToolMessage says the call waits,
and the host answers later with ``await session.pending.resolve(id, answer)``
(docs/embedding.md), whose result it gives the model. ``approvals="host"``
leaves asks to the session's ``pegboard_ask`` host (headless: denied).
Error results come back as ToolMessages with ``status="error"``; images as
standard ``image`` content blocks.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Literal

from ._common import offered_tools, require, result_parts

require("langchain_core", "langchain")

from langchain_core.tools import BaseTool, StructuredTool, ToolException  # noqa: E402

if TYPE_CHECKING:
    from .._session import Session
    from .._tools import ToolResult

__all__ = ["tools"]


def tools(session: Session, *, approvals: Literal["pending", "host"] = "pending") -> list[BaseTool]:
    """The tools ``session`` offers, as LangChain ``StructuredTool`` objects
    (the catalogue as it stands: deferred tools through ToolSearch)."""
    return [StructuredTool(name=t.name, description=t.description, args_schema=t.schema,
                           coroutine=_runner(session, t.name, approvals), func=_no_sync(t.name),
                           handle_tool_error=True, response_format="content")
            for t in offered_tools(session, defer_loading=False)]


def _runner(session: Session, name: str, approvals: str) -> Any:
    async def run(**arguments: Any) -> Any:
        call_id = session.next_call_id()
        if approvals == "pending":
            decision = await session.decide(name, arguments)
            if decision.decision == "ask":
                waiting = session.pending.hold(name, arguments, call_id, decision)
                raise ToolException(waiting.message())
        return _content(await session.call(name, arguments, call_id=call_id))

    return run


def _no_sync(name: str) -> Any:
    def run(**arguments: Any) -> Any:
        raise ToolException(f"{name} runs asynchronously: call it with ainvoke.")

    return run


def _content(result: ToolResult) -> Any:
    parts = result_parts(result)
    text = "\n".join(value for kind, value in parts if kind == "text")
    if result.is_error:
        raise ToolException(text)
    if all(kind == "text" for kind, _ in parts):
        return text
    return [{"type": "text", "text": value} if kind == "text" else
            {"type": "image", "base64": base64.b64encode(value[1]).decode(), "mime_type": value[0]}
            for kind, value in parts]

"""LangChain tools of a session's tools, for a hand-written loop and for LangGraph.

A hand-written loop binds the session's catalogue as it stands before each
model request (ToolSearch may have loaded tools since the last one):

    from pegboard.integrations.langchain import tools

    offered = tools(session)                         # list[BaseTool], again each turn
    reply = await chat_model.bind_tools(offered).ainvoke(messages)
    by_name = {t.name: t for t in offered}
    messages += [await by_name[call["name"]].ainvoke(call) for call in reply.tool_calls]   # ToolMessages

LangGraph's prebuilt agent takes a ``ToolNode`` of every tool the session may
come to offer (``tool_node``) and a model bound to the catalogue as it stands
at each step (``model``, its dynamic-model callable):

    from langgraph.prebuilt import create_react_agent
    from pegboard.integrations.langchain import model, tool_node

    agent = create_react_agent(model(session, chat_model), tool_node(session))

pegboard's permission engine decides every call. LangChain's core has no
approval step of its own, so an ask becomes a pending call
(``approvals="pending"``, the default): the ToolMessage says the call waits,
and the host answers later with ``await session.pending.resolve(id, answer)``
(docs/embedding.md), whose result it gives the model. ``approvals="host"``
leaves asks to the session's ``pegboard_ask`` host (headless: denied).

Results: error results are ToolMessages with ``status="error"``; images and
PDFs are standard ``image`` and ``file`` content blocks, which ChatAnthropic
and the Responses API take in a tool result. Chat Completions takes text only
in a tool message: for ChatOpenAI on Chat Completions, pass the messages
through ``images_after_tool_messages`` (``model(..., images_after_tools=True)``
does it), which moves them into a user message after the turn's tool
messages. Output a call streams (a command's lines) is dispatched as the
custom event ``pegboard_output`` (``astream_events``) and, inside a LangGraph
graph, written to its ``custom`` stream.

``invoke`` (synchronous) works too: the call runs on the session's own loop
(``session.sync``).
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._common import offered_tools, require, result_parts, run_streamed, text_of

require("langchain_core", "langchain")

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.runnables import Runnable, RunnableLambda  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool, ToolException  # noqa: E402

if TYPE_CHECKING:
    from langgraph.prebuilt import ToolNode

    from .._engine.session import Session
    from .._engine.streams import CallEvent
    from .._api.tools import ToolResult

__all__ = ["images_after_tool_messages", "model", "tool_node", "tools"]

Approvals = Literal["pending", "host"]


def tools(session: Session, *, approvals: Approvals = "pending") -> list[BaseTool]:
    """The tools ``session`` offers now, as LangChain ``StructuredTool``
    objects: the catalogue as it stands (deferred tools through ToolSearch).
    Bind them again before each model request."""
    return [_tool(session, t.name, t.description, t.schema, approvals)
            for t in offered_tools(session, defer_loading=False)]


def tool_node(session: Session, *, approvals: Approvals = "pending", **options: Any) -> ToolNode:
    """A LangGraph ``ToolNode`` that can run every tool ``session`` may come
    to offer: the catalogue's tools and every deferred one, loaded or not
    (a ToolNode knows its tools when built). What the model is offered is
    the catalogue as it stands: bind it with ``model``. ``options`` go to
    ``ToolNode`` (``name``, ``handle_tool_errors``, ...)."""
    from langgraph.prebuilt import ToolNode

    every = {t.name: t for t in offered_tools(session, defer_loading=True)}
    every.update({t.name: t for t in offered_tools(session, defer_loading=False)})  # ToolSearch too
    return ToolNode([_tool(session, t.name, t.description, t.schema, approvals) for t in every.values()],
                    **options)


def model(session: Session, chat_model: Any, *, approvals: Approvals = "pending",
          images_after_tools: bool = False) -> Any:
    """For ``create_react_agent``'s ``model``: a dynamic model that binds the
    session's catalogue as it stands at each step, so a tool ToolSearch
    loaded is offered from the next request on. ``images_after_tools``: for a
    model API whose tool messages take text only (ChatOpenAI on Chat
    Completions), images and PDFs move into a user message after them."""

    def bound(state: Any, runtime: Any) -> Runnable[Any, Any]:
        with_tools = chat_model.bind_tools(tools(session, approvals=approvals))
        if images_after_tools:
            return RunnableLambda(_moved_input) | with_tools
        return with_tools

    return bound


def _moved_input(value: Any) -> Any:
    messages = value.to_messages() if hasattr(value, "to_messages") else value
    return images_after_tool_messages(messages) if isinstance(messages, list) else value


def images_after_tool_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages with the images and PDFs of each turn's ToolMessages moved
    into one user message after them, the ToolMessages keeping their text (as
    Chat Completions requires: a tool message takes text only, and every tool
    message of a turn comes before the next message). pegboard's own
    ``ToolResult.openai_chat_messages`` does the same for a raw loop."""
    out: list[BaseMessage] = []
    moved: list[dict[str, Any]] = []

    def flush() -> None:
        if moved:
            out.append(HumanMessage(content=list(moved)))
            moved.clear()

    for message in messages:
        if not isinstance(message, ToolMessage):
            flush()
            out.append(message)
            continue
        content = message.content
        if isinstance(content, str):
            out.append(message)
            continue
        texts = [b if isinstance(b, str) else b.get("text", "") for b in content
                 if isinstance(b, str) or b.get("type") == "text"]
        media = [b for b in content if isinstance(b, dict) and b.get("type") != "text"]
        if not media:
            out.append(message)
            continue
        texts.append(f"[{len(media)} attachment(s) of this result follow in the next message]")
        out.append(message.model_copy(update={"content": "\n".join(texts)}))
        moved.append({"type": "text", "text": f"Attachments of the result of tool call {message.tool_call_id}:"})
        moved.extend(media)
    flush()
    return out


# --- the tools ------------------------------------------------------------------


def _tool(session: Session, name: str, description: str, schema: dict[str, Any], approvals: str) -> BaseTool:
    return StructuredTool(name=name, description=description, args_schema=schema,
                          coroutine=_runner(session, name, approvals), func=_sync_runner(session, name, approvals),
                          handle_tool_error=True, response_format="content")


def _runner(session: Session, name: str, approvals: str) -> Any:
    async def run(**arguments: Any) -> Any:
        call_id = session.next_call_id()
        if approvals == "pending":
            decision = await session.decide(name, arguments)
            if decision.decision == "ask":
                waiting = session.pending.hold(name, arguments, call_id, decision)
                raise ToolException(waiting.message())
        return _content(await run_streamed(session, name, arguments, call_id=call_id, on_output=_dispatched))

    return run


def _sync_runner(session: Session, name: str, approvals: str) -> Any:
    def run(**arguments: Any) -> Any:
        call_id = session.next_call_id()
        if approvals == "pending":
            decision = session.sync.decide(name, arguments)
            if decision.decision == "ask":
                waiting = session.pending.hold(name, arguments, call_id, decision)
                raise ToolException(waiting.message())
        return _content(session.sync.call(name, arguments, call_id=call_id))

    return run


async def _dispatched(text: str, event: CallEvent) -> None:
    from langchain_core.callbacks import adispatch_custom_event

    data = {"text": text, "kind": event.kind, "tool": event.data.get("tool"), "call_id": event.data.get("call_id")}
    try:
        await adispatch_custom_event("pegboard_output", data)
    except RuntimeError:  # run outside any LangChain run (a bare tool call): no one listens
        pass
    if "langgraph" in sys.modules:
        from langgraph.config import get_stream_writer

        try:
            writer = get_stream_writer()
        except RuntimeError:  # not inside a graph
            return
        writer({"pegboard_output": data})


def _content(result: ToolResult) -> Any:
    parts = result_parts(result)
    text = text_of(parts)
    if result.is_error:
        raise ToolException(text)
    if all(kind == "text" for kind, _ in parts):
        return text
    blocks: list[dict[str, Any]] = []
    for kind, value in parts:
        if kind == "text":
            blocks.append({"type": "text", "text": value})
        elif kind == "image":
            blocks.append({"type": "image", "base64": _b64(value[1]), "mime_type": value[0]})
        else:
            blocks.append({"type": "file", "base64": _b64(value[1]), "mime_type": "application/pdf",
                           "filename": value[0]})
    return blocks


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

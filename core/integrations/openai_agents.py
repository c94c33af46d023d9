"""OpenAI Agents SDK function tools of a session's tools: ``function_tools(session)``.

    from agents import Agent, Runner
    from pegboard.integrations.openai_agents import function_tools

    agent = Agent(name="coder", tools=function_tools(session))

pegboard's permission engine decides every call. ``needs_approval`` asks
``Session.decide``: a call that would ask a person interrupts the run
(``result.interruptions``); ``state.approve(item)`` runs it,
``state.reject(item)`` tells the model no. ``state.approve(item,
always_approve=True)`` is the SDK's own "always" for the rest of the run;
to keep a pegboard rule too, call ``session.grant(rule)`` or answer with
``remember`` in a later ``pegboard_ask``.

Schemas are sent in strict mode where strict mode can say them (optional
parameters nullable; a null means "not given"). Deferred tools come with
``defer_loading``, and the list ends with the SDK's ``ToolSearchTool()``
(the Responses API's hosted tool search, which loads them; an agent takes one
only), unless ``defer_loading=False``, which gives the catalogue as it
stands, with pegboard's ToolSearch: for models without tool search (Chat
Completions models in the SDK).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from .._decisions import Answer
from .._schemas import strict_schema
from ._common import offered_tools, require, result_parts

require("agents", "openai-agents")

from agents import FunctionTool, RunContextWrapper, Tool, ToolOutputImage, ToolOutputText, ToolSearchTool  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

if TYPE_CHECKING:
    from .._session import Session
    from .._tools import ToolResult

__all__ = ["function_tools"]


def function_tools(session: Session, *, strict: bool = True, defer_loading: bool = True) -> list[Tool]:
    """The tools ``session`` offers, as ``FunctionTool`` objects (and a
    ``ToolSearchTool`` when some of them are deferred)."""
    out: list[Tool] = []
    for tool in offered_tools(session, defer_loading=defer_loading):
        tight = strict_schema(tool.schema) if strict else None
        out.append(FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tight if tight is not None else tool.schema,
            on_invoke_tool=_invoker(session, tool.name),
            strict_json_schema=tight is not None,
            needs_approval=_approval_check(session, tool.name),
            defer_loading=tool.deferred,
        ))
    if any(isinstance(tool, FunctionTool) and tool.defer_loading for tool in out):
        # The Responses API loads deferred functions through its hosted tool search, and the
        # SDK refuses deferred tools without it.
        out.append(ToolSearchTool())
    return out


def _approval_check(session: Session, name: str) -> Any:
    async def needs_approval(ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        # A deny is not the person's to overrule: the call runs and is refused with the reason.
        return (await session.decide(name, params)).decision == "ask"

    return needs_approval


def _invoker(session: Session, name: str) -> Any:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        approved = ctx.is_tool_approved(name, ctx.tool_call_id)
        approval = Answer(allow=True) if approved else None
        result = await session.call(name, arguments, call_id=ctx.tool_call_id, approval=approval)
        return _output(result)

    return invoke


def _output(result: ToolResult) -> Any:
    parts = result_parts(result)
    if all(kind == "text" for kind, _ in parts):
        return "\n".join(text for _, text in parts)
    return [ToolOutputText(text=value) if kind == "text" else
            ToolOutputImage(image_url=f"data:{value[0]};base64,{base64.b64encode(value[1]).decode()}")
            for kind, value in parts]

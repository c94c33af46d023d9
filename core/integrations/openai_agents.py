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
parameters nullable; a null means "not given"). How deferred tools reach the
model:

- ``defer_loading=True`` (the default, for Responses models): every tool is
  in the list, the deferred ones with ``defer_loading``, and the list ends
  with the SDK's ``ToolSearchTool()`` (the Responses API's hosted tool
  search, which loads them; an agent takes one only).
- ``defer_loading=False`` (for models without tool search: Chat Completions
  models in the SDK): pegboard's ToolSearch. Every tool is in the list, each
  enabled (``is_enabled``) while the session's catalogue has it, and the SDK
  asks before every model request, so a tool ToolSearch loaded is offered
  and runs from the next request on.

Results: text, images (``ToolOutputImage``) and PDFs (``ToolOutputFileContent``).
The SDK's Chat Completions converter keeps only the text of a tool output;
``RunConfig(call_model_input_filter=images_after_tool_outputs)`` moves
images and PDFs into a user message after the tool outputs, where Chat
Completions takes them. The OpenAI APIs have no error flag: an error result's
text says what went wrong. The SDK has no way to stream a function tool's
output; ``session.stream`` and the host's ``pegboard_event`` see it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._api.decisions import Answer
from .._api.schemas import strict_schema
from ._common import data_url, offered_tools, require, result_parts, text_of

require("agents", "openai-agents")

from agents import (  # noqa: E402
    FunctionTool,
    RunContextWrapper,
    Tool,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
    ToolSearchTool,
)
from agents.run_config import CallModelData, ModelInputData  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

if TYPE_CHECKING:
    from .._engine.session import Session
    from .._api.tools import ToolResult

__all__ = ["function_tools", "images_after_tool_outputs"]


def function_tools(session: Session, *, strict: bool = True, defer_loading: bool = True) -> list[Tool]:
    """The tools ``session`` offers, as ``FunctionTool`` objects: with
    ``defer_loading``, the deferred ones flagged and a ``ToolSearchTool``;
    without, pegboard's ToolSearch and each tool enabled while the
    session's catalogue has it."""
    out: list[Tool] = []
    every = {t.name: t for t in offered_tools(session, defer_loading=True)}
    if not defer_loading:
        every.update({t.name: t for t in offered_tools(session, defer_loading=False)})  # ToolSearch too
    for tool in every.values():
        tight = strict_schema(tool.schema) if strict else None
        out.append(FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tight if tight is not None else tool.schema,
            on_invoke_tool=_invoker(session, tool.name),
            strict_json_schema=tight is not None,
            needs_approval=_approval_check(session, tool.name),
            defer_loading=defer_loading and tool.deferred,
            is_enabled=True if defer_loading else _in_catalogue(session, tool.name),
        ))
    if any(isinstance(tool, FunctionTool) and tool.defer_loading for tool in out):
        # The Responses API loads deferred functions through its hosted tool search, and the
        # SDK refuses deferred tools without it.
        out.append(ToolSearchTool())
    return out


def _in_catalogue(session: Session, name: str) -> Any:
    def enabled(ctx: RunContextWrapper[Any], agent: Any) -> bool:
        return name in {t.name for t in session.catalogue().tools}

    return enabled


def images_after_tool_outputs(data: CallModelData[Any]) -> ModelInputData:
    """A ``RunConfig.call_model_input_filter`` for Chat Completions models,
    whose tool messages take text only (the SDK's converter drops the rest):
    the images and PDFs of each run of tool outputs move into one user
    message after them, and each output keeps its text."""
    items: list[Any] = []
    moved: list[dict[str, Any]] = []

    def flush() -> None:
        if moved:
            items.append({"role": "user", "content": list(moved)})
            moved.clear()

    for item in data.model_data.input:
        raw: dict[str, Any] = dict(item) if isinstance(item, dict) else {}
        output = raw.get("output") if raw.get("type") == "function_call_output" else None
        if not isinstance(output, list):
            if raw.get("type") != "function_call_output":
                flush()
            items.append(item)
            continue
        texts = [p.get("text", "") for p in output if isinstance(p, dict) and p.get("type") == "input_text"]
        media = [p for p in output if isinstance(p, dict) and p.get("type") in ("input_image", "input_file")]
        if not media:
            items.append(item)
            continue
        texts.append(f"[{len(media)} attachment(s) of this result follow in the next message]")
        items.append({**raw, "output": "\n".join(texts)})
        moved.append({"type": "input_text", "text": f"Attachments of the result of tool call {raw['call_id']}:"})
        moved.extend(media)
    flush()
    return ModelInputData(input=items, instructions=data.model_data.instructions)


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
        return text_of(parts)
    return [ToolOutputText(text=value) if kind == "text" else
            ToolOutputImage(image_url=data_url(*value)) if kind == "image" else
            ToolOutputFileContent(file_data=data_url("application/pdf", value[1]), filename=value[0])
            for kind, value in parts]

"""A pydantic-ai toolset of a session's tools: ``PegboardToolset(session)``.

    from pydantic_ai import Agent
    from pegboard.integrations.pydantic_ai import PegboardToolset

    agent = Agent(model, toolsets=[PegboardToolset(session)])

pegboard's permission engine decides every call. A call that would ask a
person becomes pydantic-ai's approval request (the run ends with
``DeferredToolRequests``); answer it with ``DeferredToolResults``: approved
runs the call, ``ToolDenied(message)`` tells the model no. To approve and
remember the rule, pass ``metadata={tool_call_id: {"remember": "session"}}``
(or "project", "user"; ``"rule"`` picks another rule than the suggested one).

The toolset is dynamic: pydantic-ai asks it for its tools before every model
request, so it always offers the session's catalogue as it stands. Deferred
tools are offered with ``defer_loading``, so pydantic-ai's tool search loads
them. Read-only tools run side by side; the others are ``sequential`` (one at
a time, in order), as in ``Session.call_batch``.

Results: text, images and PDFs as ``BinaryContent``; a failed call is
pydantic-ai's ``ToolFailed``, so the model API gets the error flag
(``is_error`` on Anthropic). Output a call streams (a command's lines) is
emitted into the run's event stream as ``PegboardOutput`` events. With the
agent instrumented, pegboard's spans go on pydantic-ai's own
``execute_tool`` span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dataclasses import dataclass

from .._api.decisions import Answer
from ._common import offered_tools, require, result_parts, run_streamed, text_of

require("pydantic_ai", "pydantic-ai")

from pydantic import TypeAdapter  # noqa: E402
from pydantic_ai import BinaryContent, CustomEvent  # noqa: E402
from pydantic_ai.exceptions import ApprovalRequired, ToolFailed, UserError  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402
from pydantic_ai.toolsets.abstract import AbstractToolset, ToolsetTool  # noqa: E402

if TYPE_CHECKING:
    from pydantic_ai import RunContext

    from .._engine.session import Session
    from .._api.tools import ToolResult

__all__ = ["PegboardOutput", "PegboardToolset"]

_ANY_ARGS = TypeAdapter(dict[str, Any]).validator  # pegboard validates each call itself


@dataclass(kw_only=True)
class PegboardOutput(CustomEvent, name="pegboard_output"):
    """A piece of a call's output as it came (a line a command printed, a
    progress message), in the run's event stream (``event_stream_handler``,
    ``run_stream_events``); the result still carries the whole output."""

    text: str
    """The output."""
    kind: str
    """pegboard's event kind (``bash.line``, ``monitor.line``, ``progress``, ...)."""


class PegboardToolset(AbstractToolset[Any]):
    """The tools ``session`` offers, for a pydantic-ai ``Agent``."""

    def __init__(self, session: Session, *, id: str | None = None, max_retries: int = 1):
        self.session = session
        """The session whose tools are offered and whose pipeline runs the calls."""
        self._id = id
        self.max_retries = max_retries
        """How often pydantic-ai may retry a call whose arguments failed validation."""

    @property
    def id(self) -> str | None:
        """The toolset's id for pydantic-ai (None unless given)."""
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools the session offers now, each as a ``ToolDefinition`` (changing tools
        ``sequential``, deferred ones with ``defer_loading``)."""
        tools: dict[str, ToolsetTool[Any]] = {}
        for tool in offered_tools(self.session):
            definition = ToolDefinition(name=tool.name, description=tool.description,
                                        parameters_json_schema=tool.schema, sequential=not tool.read_only,
                                        defer_loading=tool.deferred)
            tools[tool.name] = ToolsetTool(toolset=self, tool_def=definition, max_retries=self.max_retries,
                                           args_validator=_ANY_ARGS)  # type: ignore[arg-type]  # pydantic-core's own validator class
        return tools

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        """Run one call through the session: a call that would ask raises ``ApprovalRequired``
        (its metadata: the reason, source and suggested rules) unless pydantic-ai approved it."""
        approval = None
        if ctx.tool_call_approved:
            meta = ctx.tool_call_metadata if isinstance(ctx.tool_call_metadata, dict) else {}
            approval = Answer(allow=True, remember=meta.get("remember"), rule=meta.get("rule"))
        else:
            decision = await self.session.decide(name, tool_args)
            if decision.decision == "ask":
                raise ApprovalRequired(metadata={"reason": decision.reason, "source": decision.source,
                                                 "suggestions": list(decision.suggestions)})
        return _returned(await self._run(name, tool_args, ctx, approval))

    async def _run(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                   approval: Answer | None) -> ToolResult:
        emitting = True

        async def output(text: str, event: Any) -> None:
            nonlocal emitting
            if emitting:
                try:
                    await ctx.emit(PegboardOutput(text=text, kind=event.kind))
                except UserError:  # no event stream in this run: nobody to stream to
                    emitting = False

        framework = _framework_span(ctx)
        if framework is None:
            return await run_streamed(self.session, name, tool_args, call_id=ctx.tool_call_id, approval=approval,
                                      on_output=output)
        from .._engine.tracing import FRAMEWORK_SPAN

        token = FRAMEWORK_SPAN.set(framework)
        try:
            return await run_streamed(self.session, name, tool_args, call_id=ctx.tool_call_id, approval=approval,
                                      on_output=output)
        finally:
            FRAMEWORK_SPAN.reset(token)


def _framework_span(ctx: RunContext[Any]) -> Any:
    """pydantic-ai's own ``execute_tool`` span of this call, when the agent is
    instrumented and pegboard traces too (else None)."""
    from .._engine.tracing import tracer

    if tracer() is None:
        return None
    from opentelemetry.trace import NoOpTracer, get_current_span

    if isinstance(ctx.tracer, NoOpTracer):
        return None
    current = get_current_span()
    return current if current.is_recording() else None


def _returned(result: ToolResult) -> Any:
    parts = result_parts(result)
    if result.is_error:
        # The model API's error flag (is_error on Anthropic), as pegboard's own converters set it.
        raise ToolFailed(text_of(parts) or "The call failed.")
    if all(kind == "text" for kind, _ in parts):
        return text_of(parts)
    return [value if kind == "text" else
            BinaryContent(data=value[1], media_type=value[0] if kind == "image" else "application/pdf")
            for kind, value in parts]

"""OpenTelemetry spans for tool calls and permission decisions.

On when the process has an OpenTelemetry SDK configured (a tracer provider
set with ``opentelemetry.trace.set_tracer_provider``), off otherwise, and
nothing is imported for it: a process that never imported
``opentelemetry.trace`` has no provider to send spans to, so the check is a
look-up in ``sys.modules``. The spans follow OpenTelemetry's GenAI semantic
conventions (``execute_tool {gen_ai.tool.name}``, ``gen_ai.operation.name``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``) and nest under whatever span
is current, a framework's own tool span included. See docs/embedding.md.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._api.decisions import Decision
    from .._api.tools import ToolResult

__all__ = ["FRAMEWORK_SPAN", "OUTCOME", "decision_span", "optional_span", "record_decision", "record_result", "span", "tracer"]

_INSTRUMENTATION = "pegboard"
# The tracer, once a real provider is set (a provider is set once per process).
_found: list[Any] = [None]
_UNKNOWN = object()

FRAMEWORK_SPAN: ContextVar[Any] = ContextVar("pegboard_framework_span", default=None)
"""Set by an adapter whose framework already made the ``execute_tool`` span
of the call it runs (pydantic-ai, instrumented): pegboard's attributes and
child spans go on that span instead of a second one of the same name."""

OUTCOME: ContextVar[list[str | None] | None] = ContextVar("pegboard_call_outcome", default=None)
"""Why the traced call in progress failed, set where it fails (``error.type``)."""


def tracer() -> Any:
    """The tracer to make pegboard's spans with, or None when no
    OpenTelemetry SDK is configured (the common case, and the cheap one)."""
    found = _found[0]
    if found is not None:
        return found
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return None  # nobody imported the API: no provider can have been set
    if getattr(api, "_TRACER_PROVIDER", _UNKNOWN) is None:
        # The API's own record that no provider was set: read directly, since asking
        # (get_tracer_provider looks in os.environ) costs a tenth of a small call.
        return None
    return _probe()


def _probe() -> Any:
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None  # the API alone: spans would go nowhere
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("pegboard")
    except PackageNotFoundError:  # run from a checkout that is not installed
        own = None
    _found[0] = provider.get_tracer(_INSTRUMENTATION, own)
    return _found[0]


def _reset() -> None:
    """Forget the tracer found (tests that set a provider of their own)."""
    _found[0] = None


@contextmanager
def span(tracer: Any, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """A span made current for the block; an exception escaping the block
    (a cancellation, a bug) is recorded on it and passes through."""
    with tracer.start_as_current_span(name, attributes=attributes, record_exception=True,
                                      set_status_on_exception=True) as current:
        yield current


@contextmanager
def optional_span(name: str, attributes: dict[str, Any]) -> Iterator[Any]:
    """``span`` when tracing is on, else nothing (for paths that are rare
    enough not to need the caller's own check first)."""
    found = tracer()
    if found is None:
        yield None
        return
    with span(found, name, attributes) as current:
        yield current


def tool_attributes(name: str, call_id: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "gen_ai.tool.type": "function"}
    if call_id is not None:
        attributes["gen_ai.tool.call.id"] = call_id
    return attributes


@contextmanager
def decision_span(tracer: Any, name: str, call_id: str | None) -> Iterator[Any]:
    """The span of one permission decision (``permission {tool}``); the
    decision goes on it with ``record_decision``."""
    attributes: dict[str, Any] = {"gen_ai.tool.name": name}
    if call_id is not None:
        attributes["gen_ai.tool.call.id"] = call_id
    with span(tracer, f"permission {name}", attributes) as current:
        yield current


def record_decision(current: Any, decision: Decision) -> None:
    """The decision, its source and reason, on a span (the decision's own and the call's)."""
    current.set_attribute("pegboard.permission.decision", decision.decision)
    current.set_attribute("pegboard.permission.source", decision.source)
    current.set_attribute("pegboard.permission.reason", decision.reason[:500])


def record_result(current: Any, result: ToolResult, outcome: str | None) -> None:
    """What the call gave back: its size, whether it failed, and why
    (``error.type``: ``denied``, ``pending``, ``timeout`` or ``tool_error``)."""
    from opentelemetry.trace import Status, StatusCode

    chars = 0
    for part in result.content:
        if part.type == "text":
            chars += len(part.text)
    current.set_attribute("pegboard.result.parts", len(result.content))
    current.set_attribute("pegboard.result.chars", chars)
    current.set_attribute("pegboard.result.is_error", result.is_error)
    if result.is_error:
        kind = outcome or "tool_error"
        current.set_attribute("error.type", kind)
        first = result.text_content().split("\n", 1)[0]
        current.set_status(Status(StatusCode.ERROR, first[:200]))

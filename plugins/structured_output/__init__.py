"""The structured_output plugin: the model hands in its final answer as data.

Tool: ``StructuredOutput``, offered only to a session the host gave an answer
schema (``Toolbox.session(output_schema=...)``). Its input schema is that
schema; an answer that does not match is refused with the validation errors,
so the model can correct it, and a matching one becomes
``session.structured_output`` and reaches the host as the event
``structured_output``. See docs/plugins/structured_output.md.

This module stays light: jsonschema is imported when the tool is called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pegboard import Absent, Tool, Vote, hookimpl

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext, PluginSession

__all__ = ["PEGBOARD_API"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("StructuredOutput",)

# What the tool is registered with (listings, `tools show`); each session's
# catalogue shows that session's own answer schema instead.
_PLACEHOLDER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "description": "The session's answer schema (given by the host): this tool's input is the final answer.",
}


def _has_answer_schema(session: PluginSession) -> bool | Absent:
    return session.output_schema is not None or _NO_SCHEMA


_NO_SCHEMA = Absent("the host gave this session no answer schema: Toolbox.session(output_schema=...) gives one")


def _answer_schema(session: PluginSession) -> Mapping[str, Any]:
    return session.output_schema or _PLACEHOLDER_SCHEMA


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    register(Tool(vote=_tool_vote, name="StructuredOutput", handler="pegboard.plugins.structured_output._handlers:structured_output",
                  input_schema=_PLACEHOLDER_SCHEMA, read_only=True, loading="always", permission="read",
                  offered_when=_has_answer_schema, session_schema=_answer_schema))


def _tool_vote(request: PermissionRequest) -> Vote | None:
    return Vote.allow("StructuredOutput only hands the model's answer to the host")

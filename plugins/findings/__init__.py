"""The findings plugin: a code review's findings handed to the host as data.

Tool: ``ReportFindings`` (at most 32 findings, most severe first, each with
its file, summary and failure scenario). The validated list reaches the host
as the event ``findings`` and as the result's structured content (under
``pegboard serve``, the tool result's ``_meta["pegboard/structured"]``). ``Finding`` is
the typed form of one. See docs/plugins/findings.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pegboard import Tool, Vote, hookimpl

if TYPE_CHECKING:
    from pegboard import PermissionRequest, PluginContext

    from ._models import Finding, ReportFindingsInput

__all__ = ["MAX_FINDINGS", "PEGBOARD_API", "Finding", "ReportFindingsInput"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("ReportFindings",)
MAX_FINDINGS = 32
"""The most findings one ReportFindings call may carry."""

_P = "pegboard.plugins.findings"


def __getattr__(name: str) -> Any:
    if name in ("Finding", "ReportFindingsInput"):  # pydantic models, imported on first use
        from . import _models

        return getattr(_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    register(Tool(vote=_tool_vote, name="ReportFindings", handler=f"{_P}._handlers:report_findings",
                  input_model=f"{_P}._models:ReportFindingsInput", read_only=True, loading="always",
                  permission="read"))


def _tool_vote(request: PermissionRequest) -> Vote | None:
    return Vote.allow("ReportFindings only hands the review's findings to the host")

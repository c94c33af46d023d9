"""The tools' input models (the reference's parameter names). Pydantic only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EnterPlanModeInput", "ExitPlanModeInput"]


class EnterPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExitPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str | None = Field(None, description=(
        "The plan, in Markdown: what you will change, in which files, in what order, and how you will check it."))
    planFile: str | None = Field(None, description=(
        "Instead of plan: a file in the working directories that holds the plan."))
    allowedPrompts: list[dict[str, Any]] | None = Field(None, description=(
        "Accepted for compatibility with Claude Code's schema; not used."))

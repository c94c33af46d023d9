"""``[plugins.todos]``: which of Claude Code's two task-list styles the model gets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TodosConfig"]


class TodosConfig(BaseModel):
    """``[plugins.todos]``."""

    model_config = ConfigDict(extra="forbid")

    style: Literal["tasks", "todowrite"] = Field("tasks", description=(
        '"tasks": TaskCreate, TaskGet, TaskUpdate and TaskList (Claude Code\'s current tools); '
        '"todowrite": TodoWrite alone, for models trained on Claude Code\'s older tool.'))

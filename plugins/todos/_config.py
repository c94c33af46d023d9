"""``[plugins.todos]``: which of Claude Code's two task-list styles the model gets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Style", "TodosConfig"]

Style = Literal["tasks", "todowrite"]


class TodosConfig(BaseModel):
    """``[plugins.todos]``."""

    model_config = ConfigDict(extra="forbid")

    style: Style = Field("tasks", description=(
        '"tasks": TaskCreate, TaskGet, TaskUpdate and TaskList (Claude Code\'s current tools); '
        '"todowrite": TodoWrite alone, for models trained on Claude Code\'s older tool. A session\'s '
        "own choice (the host's use_style) comes first."))

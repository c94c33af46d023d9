"""The input models of the core's own tools (``_builtin_tools``), imported
when one of them is first validated or its schema shown."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .tools import MAX_LOADED_PER_CALL

__all__ = ["NoInput", "ScratchpadReadInput", "TaskOutputInput", "TaskStopInput", "ToolSearchInput"]


class _Input(BaseModel):
    # Built when first validated (or its schema asked for), not at import:
    # a start-up that never calls these tools never builds their validators.
    model_config = ConfigDict(defer_build=True)


class ToolSearchInput(_Input):
    query: str = Field(description='"select:A,B" loads those tools; otherwise words to search names and '
                                   'descriptions, "+word" required.')
    max_results: int = Field(default=5, ge=1, le=MAX_LOADED_PER_CALL,
                             description="How many tools a keyword search loads.")


class ScratchpadReadInput(_Input):
    name: str = Field(description="The entry's name.")
    offset: int = Field(default=0, ge=0, description="First character to return.")
    limit: int = Field(default=20_000, ge=1, le=100_000, description="How many characters to return.")


class NoInput(_Input):
    pass


class TaskOutputInput(_Input):
    task_id: str | None = Field(default=None, description="The task id, as returned when the task started; "
                                                        "leave it out to list this session's tasks.")
    wait_s: float = Field(default=0, ge=0, le=600,
                          description="Wait up to this many seconds for a running task to finish.")


class TaskStopInput(_Input):
    task_id: str | None = Field(default=None, description="The task to stop.")
    # Models trained on Claude Code's schema send its older name for the
    # same field: accepted as that, whatever kind of task it names.
    shell_id: str | None = Field(default=None, description="Older name for task_id.")

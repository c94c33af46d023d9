"""The tools' input models, with Claude Code's parameter names. Pydantic only."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["STATUSES", "TaskCreateInput", "TaskGetInput", "TaskListInput", "TaskUpdateInput", "TodoItem",
           "TodoWriteInput"]

Status = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed")


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its ``$defs`` written in where they are used: models
    read a nested object best spelled out, and strict-mode checkers that
    refuse bare ``$ref`` (the OpenAI Agents SDK's) accept it. The nested
    models here are not recursive."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[ref.rsplit("/", 1)[1]], **rest})
        return {key: walk(value) for key, value in node.items()}

    inlined: dict[str, Any] = walk(schema)
    return inlined


class _InlineSchema(BaseModel):
    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _inlined(super().model_json_schema(*args, **kwargs))


class TaskCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, description="A short title in the imperative (\"Run the tests\").")
    description: str = Field(description="What has to be done, and how you will know it is done.")
    activeForm: str | None = Field(None, description=(
        "The title in the present continuous (\"Running the tests\"), shown while the task is in progress."))
    metadata: dict[str, Any] | None = Field(None, description="Free-form data to keep with the task.")


class TaskGetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(min_length=1, description="The task's id, as TaskCreate or TaskList gave it.")


class TaskUpdateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taskId: str = Field(min_length=1, description="The task to change.")
    subject: str | None = Field(None, min_length=1, description="A new title.")
    description: str | None = Field(None, description="A new description.")
    activeForm: str | None = Field(None, description="A new present-continuous title.")
    status: Literal["pending", "in_progress", "completed", "deleted"] | None = Field(None, description=(
        "pending, in_progress or completed; deleted removes the task from the list."))
    addBlocks: list[str] | None = Field(None, description="Ids of tasks that cannot start until this one is done.")
    addBlockedBy: list[str] | None = Field(None, description="Ids of tasks that must be done before this one.")
    owner: str | None = Field(None, description="Who works on it (an agent's name).")
    metadata: dict[str, Any] | None = Field(None, description=(
        "Keys to merge into the task's metadata; a key set to null is removed."))


class TaskListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="What to do, in the imperative (\"Run the tests\").")
    status: Status = Field(description="pending, in_progress or completed.")
    activeForm: str = Field(min_length=1, description="The same in the present continuous (\"Running the tests\").")


class TodoWriteInput(_InlineSchema):
    model_config = ConfigDict(extra="forbid")

    todos: list[TodoItem] = Field(description="The whole updated list: it replaces the one before.")

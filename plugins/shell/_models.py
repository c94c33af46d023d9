"""Input models of the shell plugin's tools."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["BashInput", "EnterWorktreeInput", "ExitWorktreeInput", "MonitorInput", "TaskStopInput"]

BASH_DEFAULT_MS = 120_000
BASH_MAX_MS = 600_000
MONITOR_DEFAULT_MS = 300_000
MONITOR_MAX_MS = 1_800_000


class BashInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The command line to run in bash.")
    timeout: float | None = Field(
        None, gt=0, le=BASH_MAX_MS,
        description=f"Milliseconds before the command is killed (default {BASH_DEFAULT_MS}, at most {BASH_MAX_MS}).")
    description: str | None = Field(None, description="What the command does, in a few plain words.")
    run_in_background: bool = Field(False, description="Run detached and return a task id at once.")
    dangerouslyDisableSandbox: bool = Field(
        False, description="Run outside the sandbox. Always asks the person first.")


class MonitorInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Optional in the schema as models know it (a WebSocket watch needs no
    # command); this Monitor watches scripts only, so a call without one is
    # refused with that said.
    command: str | None = Field(None, min_length=1,
                                description="The script to watch; each stdout line becomes an event.")
    description: str | None = Field(None, min_length=1,
                                    description="A short label shown with every event (default: the command).")
    timeout_ms: float = Field(MONITOR_DEFAULT_MS, gt=0, le=MONITOR_MAX_MS,
                              description=f"When to stop watching (default {MONITOR_DEFAULT_MS}, "
                                          f"at most {MONITOR_MAX_MS}).")

    @model_validator(mode="after")
    def _needs_command(self) -> MonitorInput:
        if self.command is None:
            raise ValueError("give command: the script to watch (WebSocket watches are not available here)")
        if self.description is None:
            self.description = self.command if len(self.command) <= 60 else self.command[:59] + "…"
        return self


class TaskStopInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    task_id: str | None = Field(None, min_length=1, description="The id of the background task to stop.")
    shell_id: str | None = Field(None, min_length=1, description="Older name for task_id.")

    @model_validator(mode="after")
    def _one_id(self) -> TaskStopInput:
        if self.task_id is None:
            if self.shell_id is None:
                raise ValueError("give task_id: the id of the background task to stop")
            self.task_id = self.shell_id
        return self


_NAME = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")


class EnterWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=64, description="Name of a new worktree; its branch is worktree-<name>.")
    path: str | None = Field(None, description="An existing worktree of this repository to move into instead.")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not _NAME.fullmatch(v) or any(seg in (".", "..") for seg in v.split("/")):
            raise ValueError("use letters, digits, '.', '_', '-', in segments joined by '/' (no '.' or '..')")
        return v

    @model_validator(mode="after")
    def _one_of(self) -> EnterWorktreeInput:
        if self.name is not None and self.path is not None:
            raise ValueError("give name or path, not both")
        return self


class ExitWorktreeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["keep", "remove"] = Field("keep", description="keep (the default) leaves the worktree; remove "
                                                                  "deletes it and its branch.")
    discard_changes: bool = Field(False, description="Remove even with uncommitted files or unmerged commits.")

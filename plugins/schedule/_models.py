"""The tools' input models (Claude Code's names and schemas). Pydantic only,
so listing tools stays cheap."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CronCreateInput", "CronDeleteInput", "CronListInput", "ScheduleWakeupInput"]


class ScheduleWakeupInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delaySeconds: float | None = Field(None, description=(
        "Seconds from now until the next iteration, clamped to 60-3600. Required unless stop is true."))
    reason: str | None = Field(None, description=(
        "One sentence on why this delay, shown to the person. Required unless stop is true."))
    prompt: str | None = Field(None, description=(
        "The loop's input, run again when the wake-up fires. Required unless stop is true."))
    stop: bool = Field(False, description="End the loop instead: the pending wake-up is cancelled.")
    noop: bool | None = Field(None, description=(
        "True when this iteration changed nothing (found nothing new). Required unless stop is true."))


class CronCreateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cron: str = Field(description=(
        "Five fields in local time: minute hour day-of-month month day-of-week, e.g. '*/15 * * * *' or "
        "'0 9 * * 1-5'."))
    prompt: str = Field(min_length=1, description="The prompt to run at each firing.")
    recurring: bool = Field(True, description=(
        "true (the default): fire at every match until the job expires 7 days after it is made; false: fire "
        "once, at the next match, then the job is deleted."))
    durable: bool | None = Field(None, description=(
        "Accepted for compatibility: every job is kept in the store and survives restarts."))


class CronListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CronDeleteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=16, description="The job's id, as CronCreate or CronList gave it.")

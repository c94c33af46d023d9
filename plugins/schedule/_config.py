"""``[plugins.schedule]``: the zone cron expressions are read in and times are shown in."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ScheduleConfig"]


class ScheduleConfig(BaseModel):
    """``[plugins.schedule]``."""

    model_config = ConfigDict(extra="forbid")

    timezone: Annotated[str | None, Field(description=(
        "The IANA zone (\"Europe/Berlin\") CronCreate's five fields are read in and every time is shown "
        "in; unset: the machine's own zone. A job keeps the zone it was made in."))] = None

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from ._timing import check_zone

        return check_zone(value)

    def zone_name(self) -> str:
        from ._timing import local_zone_name

        return self.timezone or local_zone_name()

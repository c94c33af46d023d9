"""``[plugins.memory]``: whose memories, kept how widely, and how much of them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pegboard import UserScope

__all__ = ["MemoryConfig", "Scope", "check_person"]

Scope = Literal["person", "project"]
MAX_PERSON_CHARS = 128


def check_person(name: str) -> str:
    """``name`` if it can name a person's memories, else ``ValueError`` saying what can."""
    if not name or len(name) > MAX_PERSON_CHARS or not name.isprintable() or name != name.strip():
        raise ValueError(f"a person's name is 1 to {MAX_PERSON_CHARS} printable characters without spaces around "
                         f"them, not {name!r}")
    return name


class MemoryConfig(BaseModel):
    """``[plugins.memory]``."""

    model_config = ConfigDict(extra="forbid")

    person: Annotated[str | None, UserScope("it decides whose memories the agent reads and writes")] = Field(
        None, description=(
            "Whose memories these are; default: your login name. A host serving several people names each "
            "session's with use_person(session, name)."))
    scope: Scope = Field("person", description=(
        '"person": one set of memories for all your projects; "project": a set per project root '
        "(memories made in one project are not seen in another)."))
    max_file_bytes: int = Field(100_000, ge=1, le=10_000_000, description=(
        "The most bytes (UTF-8) one memory file may hold."))
    max_total_bytes: int = Field(2_000_000, ge=1, le=1_000_000_000, description=(
        "The most bytes all the memory files of one person (and project, with scope = \"project\") may hold."))
    max_files: int = Field(1_000, ge=1, le=100_000, description="The most memory files one set may hold.")

    @field_validator("person")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        return None if value is None else check_person(value)

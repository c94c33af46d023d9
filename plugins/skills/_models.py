"""The skill tools' input models, apart from their handlers (``_handlers``):
a tool listing builds the models without importing the catalogue, search
and activation code the handlers need."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._skill import WRITE_NAME_RE

__all__ = ["WRITE_NAME_RE", "SkillDeleteInput", "SkillInput", "SkillReadInput", "SkillSearchInput", "SkillWriteInput"]

# Writing is strict: the name becomes a folder name under the user's config dir.


class SkillInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    skill: str = Field(description="The skill's name as the listing gives it, with no leading slash.")
    args: str = Field("", description="Text for the skill; it fills $ARGUMENTS in the instructions.")


class SkillReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The skill's name.")
    file: str | None = Field(
        None, description="A file the skill ships, relative to its folder (e.g. reference.md); omit for SKILL.md.")


class SkillSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=1000, description="A Python regular expression, matched against each line of every skill.")
    ignore_case: bool = Field(False, description="Match regardless of case.")
    limit: int = Field(100, ge=1, le=500, description="At most this many matching lines.")


class SkillWriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=WRITE_NAME_RE.pattern,
                      description="Lower-case letters, digits, '-' and '_', at most 64; also the folder name.")
    description: str | None = Field(
        None, min_length=1, max_length=1024,
        description="When to use the skill, in a sentence or two. Required for a new skill.")
    body: str | None = Field(None, description="The instructions (Markdown). Omit to keep the existing ones.")
    allowed_tools: list[str] | None = Field(
        None, description="Tools pre-approved while the skill is active, e.g. ['Read', 'Bash(git:*)']. "
                          "Omit to keep the existing list; [] removes it. Setting it asks the person.")
    fields: dict[str, Any] | None = Field(
        None, description="Other front-matter keys to set (e.g. license, metadata); null as a value removes a key.")


class SkillDeleteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The name of a skill in the user's skills folder.")

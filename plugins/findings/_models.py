"""ReportFindings' input (the reference's parameter names). Pydantic only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from . import MAX_FINDINGS

__all__ = ["Finding", "ReportFindingsInput"]


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


class Finding(BaseModel):
    """One verified finding of a code review."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1, description="The file the problem is in, as a path from the project root.")
    summary: str = Field(min_length=1, description="What is wrong, in a sentence or two.")
    failure_scenario: str = Field(min_length=1, description=(
        "How it goes wrong: the input or sequence of events that triggers it, and what happens then."))
    line: int | None = Field(None, ge=1, description="The line the problem starts at (1 is the first).")
    short_summary: str | None = Field(None, description="A title of a few words, for a list.")
    category: str | None = Field(None, description="The kind of problem (bug, security, performance, ...).")
    verdict: str | None = Field(None, description="What you concluded after checking it (confirmed, likely, ...).")
    outcome: str | None = Field(None, description="What should happen to it (fix, follow up, ...).")


class ReportFindingsInput(_InlineSchema):
    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(max_length=MAX_FINDINGS, description=(
        f"The verified findings, the most severe first; at most {MAX_FINDINGS}."))
    level: str | None = Field(None, description="The effort the review ran at (as the review instructions name it).")

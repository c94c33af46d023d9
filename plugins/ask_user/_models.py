"""AskUserQuestion's input (Claude Code's names and limits). Pydantic only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["OTHER", "AskUserQuestionInput", "Option", "Question"]

OTHER = "Other"
"""The choice always added to each question: the person's own answer."""


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


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=60, description="The choice as the person sees it, a few words.")
    description: str = Field(description="What choosing it means, or what follows from it.")
    preview: str | None = Field(None, description=(
        "Optional: something to show beside the choice (a code snippet, a mock-up) to compare options by."))


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="The whole question, ending with a question mark.")
    header: str = Field(min_length=1, max_length=12, description=(
        "A short label for the question, at most 12 characters (\"Library\", \"Auth method\")."))
    options: list[Option] = Field(min_length=2, max_length=4, description=(
        "2 to 4 choices; an \"Other\" choice for the person's own answer is always added, so do not add one."))
    multiSelect: bool = Field(description="true to let the person pick several choices, not just one.")

    @model_validator(mode="after")
    def _distinct_labels(self) -> Question:
        labels = [o.label.strip().lower() for o in self.options]
        if len(set(labels)) != len(labels):
            raise ValueError(f"the options of {self.question!r} must have different labels")
        if OTHER.lower() in labels:
            raise ValueError(f"an {OTHER!r} choice is added to every question: leave it out of the options")
        return self


class AskUserQuestionInput(_InlineSchema):
    model_config = ConfigDict(extra="forbid")

    questions: list[Question] = Field(min_length=1, max_length=4, description="1 to 4 questions to ask.")
    answers: dict[str, str] | None = Field(None, description=(
        "Filled in by the front end with the person's answers, by question; do not set it."))
    annotations: dict[str, Any] | None = Field(None, description=(
        "Filled in by the front end with notes on the answers, by question; do not set it."))
    metadata: dict[str, Any] | None = Field(None, description=(
        "Optional data kept for statistics (a source label); not shown to the person."))

    @model_validator(mode="after")
    def _distinct_questions(self) -> AskUserQuestionInput:
        texts = [q.question.strip() for q in self.questions]
        if len(set(texts)) != len(texts):
            raise ValueError("each question must be asked once")
        return self

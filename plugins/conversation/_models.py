"""The conversation tools' inputs, and the host's figures for ContextCheck. Pydantic only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ContextCheckInput", "ContextCompactInput", "ContextUsage", "ConversationReadInput",
           "ConversationSearchInput", "MAX_READ", "MAX_SEARCH_LIMIT"]

MAX_SEARCH_LIMIT = 100
MAX_READ = 20


class ConversationSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=1000,
                       description="What to look for: text matched anywhere in a line, ignoring case (or a regular "
                                   "expression, with regex).")
    regex: bool = Field(default=False, description="Treat query as a regular expression (Python's syntax, "
                                                   "case-sensitive; (?i) ignores case).")
    limit: int = Field(default=20, ge=1, le=MAX_SEARCH_LIMIT, description="The most matching lines to return.")


class ConversationReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: int = Field(ge=1, description="The first message to read: its #N as ConversationSearch shows it.")
    count: int = Field(default=1, ge=1, le=MAX_READ, description="How many messages to read from start.")


class ContextCheckInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextCompactInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: str | None = Field(default=None, max_length=4000,
                                     description="What the summary must keep, or may drop; it takes precedence "
                                                 "over the usual summary.")
    keep_recent: bool = Field(default=True, description="Keep the most recent turns word for word; false starts "
                                                        "afresh from the summary alone.")


class ContextUsage(BaseModel):
    """The host's figures for the model's live window, which ContextCheck reports
    (what ``pegboard_context_usage`` returns, or a dict of these fields)."""

    model_config = ConfigDict(extra="forbid")

    used_tokens: int = Field(ge=0)
    """Tokens the live window holds now (the last request's input, say)."""
    window_tokens: int = Field(gt=0)
    """The model's context window."""
    compact_at_tokens: int | None = Field(default=None, gt=0)
    """Where the host compacts by itself, if it does."""
    kept_recent_tokens: int | None = Field(default=None, ge=0)
    """About how many tokens of the most recent turns a compaction keeps word for word."""
    overhead_tokens: int | None = Field(default=None, ge=0)
    """The system prompt and tool definitions: part of every request, never compacted."""
    compactions: int | None = Field(default=None, ge=0)
    """Compactions so far in this conversation."""

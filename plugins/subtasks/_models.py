"""The tools' input models: Claude Code's names and schemas, plus meka's narrowing."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from ._config import ABSOLUTE_MAX_DEPTH, check_names

__all__ = ["AgentInput", "DeleteAgentInput", "ListAgentsInput", "SendMessageInput", "SubagentHandbackInput",
           "ToolAccess"]

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class ToolAccess(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="The tool's name.")
    access: Literal["read", "full"] = Field(description="read: only what the tool counts as reading; full: all.")


class AgentInput(BaseModel):
    description: str = Field(description="A short (3-5 word) label for the task, shown to the person.")
    prompt: str = Field(description=(
        "The task. The agent starts without your conversation: say everything it needs, and what to report."))
    subagent_type: str | None = Field(None, description=(
        "Which agent to start (from the list in this tool's description); general-purpose when left out."))
    model: str | None = Field(None, description=(
        "A model for this agent (sonnet, opus, haiku, or a name the operator configured), over its definition's."))
    run_in_background: bool | None = Field(None, description=(
        "Run it in the background (the default): you get its id at once and its report arrives when it "
        "finishes. false waits for the report."))
    isolation: Literal["worktree"] | None = Field(None, description=(
        "worktree: the agent works in a git worktree of its own, so its changes do not touch yours."))
    name: str | None = Field(None, pattern=NAME_PATTERN, description="A name SendMessage can use instead of the id.")
    mode: str | None = Field(None, description=(
        "A permission mode or level for the agent (plan, default, acceptEdits, read, workspace, ...); never "
        "wider than yours: a wider one gets yours."))
    deny_tools: list[str] = Field(default_factory=list, description="Tools the agent must not get.")
    deny_servers: list[str] = Field(default_factory=list, description="MCP servers the agent must not get.")
    # (the item's schema written in, not a $ref: strict-mode checkers refuse bare references)
    tool_access: list[Annotated[ToolAccess, WithJsonSchema(ToolAccess.model_json_schema())]] = Field(
        default_factory=list, description=(
        "Tools an agent gets only when given, with how much: [{\"tool\": \"memory\", \"access\": \"read\"}] "
        "lets it read your memories. Never more than the tool allows or you hold; without it, it gets none of "
        "them."))
    max_depth: int | None = Field(None, ge=0, le=ABSOLUTE_MAX_DEPTH, description=(
        "How many levels of sub-agents may nest below this one (it can only lower the limit; 0: none)."))

    @field_validator("mode")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        if value is not None:
            from pegboard import policy_for

            policy_for(value)
        return value

    @field_validator("deny_tools", "deny_servers")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return check_names(value)


class SendMessageInput(BaseModel):
    to: str = Field(description="The agent: its id (the first line of Agent's result) or its name.")
    message: str = Field(description="What to ask or tell it. It keeps its own conversation, so refer to it.")
    summary: str | None = Field(None, description="A 5-10 word label for the person.")


class ListAgentsInput(BaseModel):
    pass


class DeleteAgentInput(BaseModel):
    agent: str = Field(description="The agent's id or name.")


class SubagentHandbackInput(BaseModel):
    message: str = Field(min_length=1, description=(
        "Your complete report for the agent that started you: what you did, what you found, what is left."))

"""``[plugins.subtasks]``: how deep sub-agents may nest, what they never get,
and the reference runner for hosts without a model loop of their own."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pegboard import UserScope

__all__ = ["ABSOLUTE_MAX_DEPTH", "RUNNER_DEFAULTS", "SubtasksConfig", "check_names"]

# However the config is set, nesting stops here: a runaway orchestration must
# not be able to fork itself without bound.
ABSOLUTE_MAX_DEPTH = 8

# (base_url, api_key_env) of each reference runner when the config names none.
RUNNER_DEFAULTS = {
    "anthropic": ("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
}


def check_names(names: list[str]) -> list[str]:
    """Tool and server names in a deny list: a rule's name, no specifier."""
    for name in names:
        if not name or any(c in name for c in "() \t\n"):
            raise ValueError(f"{name!r} is not a tool or server name")
    return names


# Empty lists are given as `[]`, not default_factory=list: pydantic copies a
# mutable default for each model, and building a field with default_factory=list
# parses list's text signature (inspect), about 2M instructions a field at every start-up.


class SubtasksConfig(BaseModel):
    """``[plugins.subtasks]``.

    ``runner``, ``base_url`` and ``api_key_env`` decide where the child's
    conversation (and the API key) is sent: only the person's own config may
    set them, never a project's, trusted or not (``UserScope``).
    """

    model_config = ConfigDict(extra="forbid")

    max_depth: int = Field(3, ge=0, le=ABSOLUTE_MAX_DEPTH, description=(
        "How many levels of sub-agents may nest below a top session (0 removes Agent, SendMessage, "
        f"ListAgents and DeleteAgent; at most {ABSOLUTE_MAX_DEPTH})."))
    deny_tools: list[str] = Field(default=[], description=(
        "Tools never offered to a sub-agent (rule names: Bash also takes Monitor)."))
    deny_servers: list[str] = Field(default=[], description="MCP servers never offered to a sub-agent.")
    background: bool = Field(True, description=(
        "Agent's default for run_in_background, when a host listens for the report (pegboard_event)."))
    runner: Annotated[Literal["anthropic", "openai"] | None,
                      UserScope("it decides where sub-agents' conversations are sent")] = Field(None, description=(
        "The reference runner for hosts with no loop of their own: the Anthropic Messages API or an "
        "OpenAI-compatible Chat Completions API. Person's config only."))
    model: str | None = Field(None, description="The model the reference runner asks for.")
    models: dict[str, str] = Field(default_factory=dict, description=(
        "Model hints (sonnet, opus, haiku, fable, or your own names) and the model each means."))
    base_url: Annotated[str | None, UserScope("the conversations and the API key are sent there")] = Field(
        None, description="The API's base URL (default: the vendor's). Person's config only.")
    api_key_env: Annotated[str | None, UserScope("it picks which secret of yours is sent")] = Field(None, description=(
        "The environment variable holding the API key (default ANTHROPIC_API_KEY or OPENAI_API_KEY). "
        "Person's config only."))
    max_turns: int = Field(50, ge=1, le=1000, description="Model turns a sub-agent gets per prompt, at most.")
    max_tokens: int = Field(8192, ge=1, le=200_000, description="max_tokens of each model request.")
    request_timeout_s: float = Field(300.0, gt=0, le=3600, description="How long one model request may take.")
    retries: int = Field(5, ge=0, le=20, description=(
        "Retries of a request answered 429, 529 or 5xx, or not answered, or answered with a reply that "
        "cannot be read."))
    backoff_s: float = Field(1.0, ge=0, le=60, description=(
        "The first wait before a retry (doubling each time); a 429's retry-after wins."))

    @field_validator("deny_tools", "deny_servers")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        return check_names(value)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not value.replace("_", "a").isalnum():
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    def endpoint(self) -> tuple[str, str]:
        """(base_url, api_key_env) of the configured runner."""
        assert self.runner is not None
        base, env = RUNNER_DEFAULTS[self.runner]
        return (self.base_url or base).rstrip("/"), self.api_key_env or env

"""``[plugins.shell]``: how commands are confined and what they inherit."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pegboard import UserScope

__all__ = ["ShellConfig"]

# Kept in sync with _runner.FORBIDDEN_ENV (not imported: this module must stay light).
_FORBIDDEN = frozenset({
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "GLOBIGNORE",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LESSOPEN", "LESSCLOSE", "RIPGREP_CONFIG_PATH",
    "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "PERL5LIB", "RUBYOPT", "NODE_OPTIONS", "EDITOR", "VISUAL",
    "PAGER", "GIT_PAGER", "MANPAGER", "BROWSER", "PATH",
})


# Empty lists are given as `[]`, not default_factory=list: pydantic copies a
# mutable default for each model, and building a field with default_factory=list
# parses list's text signature (inspect), about 2M instructions a field at every start-up.


class ShellConfig(BaseModel):
    """The shell plugin's settings."""

    model_config = ConfigDict(extra="forbid")

    # User scope (docs/security.md): what confines commands, and what they
    # inherit, is the person's choice, never a checkout's.
    sandbox: Annotated[Literal["auto", "bubblewrap", "landlock", "off"], UserScope("it chooses the sandbox")] = Field(
        "auto", description="auto: bubblewrap, else Landlock, else none")
    # Unset: the box runs a command that may write the working directories
    # unasked only where the policy runs edits there unasked (acceptEdits,
    # the workspace level); true: also in default and the other modes that ask
    # for edits; false: never. Plan mode never.
    auto_allow_if_sandboxed: Annotated[bool | None, UserScope("it lets sandboxed commands run unasked")] = Field(
        None, description="unset: a sandboxed command runs unasked where edits do (acceptEdits, workspace); "
                          "true: also in default; false: never (plan mode: never)")
    allow_network: Annotated[bool, UserScope("it gives the sandbox the network")] = Field(
        False, description="let sandboxed commands reach the network")
    allow_unix_sockets: Annotated[bool, UserScope("it opens the sandbox to local sockets")] = Field(
        False, description="let sandboxed commands open AF_UNIX sockets (docker.sock, D-Bus, ssh/gpg agents)")
    max_output_chars: int = Field(30_000, ge=1_000, le=1_000_000,
                                  description="past this, a command's output is spilled to a file the model reads in pieces")
    pass_env: Annotated[list[str], UserScope("it passes your environment's variables to commands")] = Field(
        default=[], description="extra variables passed from pegboard's env")
    env: Annotated[dict[str, str], UserScope("variables change what programs run")] = Field(
        default_factory=dict, description="variables set for every command")
    # Not user scope: every layer's entries add up, so a layer can only hide more.
    hidden_paths: list[str] = Field(
        default=[], description="more paths the sandbox hides (besides credentials); every layer's add up")

    @field_validator("pass_env")
    @classmethod
    def _no_code_vars(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if n in _FORBIDDEN or n.startswith(("GIT_", "BASH_FUNC_"))]
        if bad:
            raise ValueError(f"these variables make programs run code and are never passed: {', '.join(bad)}")
        return names

    @field_validator("env")
    @classmethod
    def _no_code_env(cls, values: dict[str, str]) -> dict[str, str]:
        cls._no_code_vars(list(values))
        return values

"""The skills plugin: folders of instructions (``SKILL.md``) the model starts on demand.

Skills come from the user's folder (``<config dir>/skills/``), the project's
(``<root>/.pegboard/skills/``) and plugins (the ``pegboard_skill_dirs`` hook),
in that order of precedence. See docs/plugins/skills.md.

This module is the entry point and stays light: pydantic and pegboard only.
YAML parsing, the catalogue and the handlers are imported when first needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pegboard import PermissionRequest, PluginContext, Rule, Tool, UserScope, Vote, hookimpl

if TYPE_CHECKING:
    from pegboard import RuleSamples
    import click

    from pegboard import PluginSession

__all__ = ["SkillsConfig"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("Skill", "SkillRead", "SkillSearch", "SkillWrite", "SkillDelete", "run_skill_script")

_MOD = "pegboard.plugins.skills"


class SkillsConfig(BaseModel):
    """``[plugins.skills]``."""

    model_config = ConfigDict(extra="forbid")

    agent_managed: Annotated[bool, UserScope("it lets the model write your own skills")] = Field(
        False, description="Offer SkillWrite and SkillDelete (never to sub-agents).")
    scripts: bool = Field(False, description="Offer run_skill_script.")
    listing_budget: int = Field(
        4000, ge=0, le=100_000, description="Characters of the skill listing in the Skill tool's description.")
    preapprove: Annotated[list[Literal["user", "project", "plugin"]],
                          UserScope("it turns skills' allowed-tools into grants")] = Field(
        default_factory=lambda: ["user", "project", "plugin"],  # type: ignore[arg-type]  # the Literal items
        description="Sources whose skills' allowed-tools become session grants while active.")
    script_timeout_s: float = Field(120.0, gt=0, le=3600, description="run_skill_script's time limit.")


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    from . import _hookspecs

    add(_hookspecs)


@hookimpl
def pegboard_prompts(context: PluginContext) -> list[dict[str, Any]]:
    """Skills as prompts (for `pegboard serve`): their arguments become $ARGUMENTS."""
    from ._describe import catalog_for_context

    out = []
    for skill in catalog_for_context(context):
        hint = skill.front_matter.get("argument-hint")
        out.append({"name": skill.name, "description": skill.description, "arguments": [
            {"name": "arguments", "required": False,
             "description": f"What to put in $ARGUMENTS{f' ({hint})' if hint else ''}"}]})
    return out


@hookimpl
def pegboard_prompt(context: PluginContext, name: str, arguments: dict[str, str]) -> str | None:
    from ._describe import catalog_for_context
    from ._skill import substitute

    skill = catalog_for_context(context).get(name)
    return substitute(skill, arguments.get("arguments", "")) if skill is not None else None


@hookimpl
def pegboard_config_model() -> type[BaseModel]:
    return SkillsConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: SkillsConfig, context: PluginContext) -> None:
    if not context.project_trusted:
        folder = context.root / ".pegboard" / "skills"
        try:
            count = sum(1 for child in folder.iterdir() if (child / "SKILL.md").is_file())
        except OSError:
            count = 0
        if count:
            context.report_ignored(folder, f"{count} project skill{'s' if count > 1 else ''}")
    h, m = f"{_MOD}._handlers", f"{_MOD}._models"
    register(Tool(vote=_tool_vote, name="Skill", handler=f"{h}:skill", input_model=f"{m}:SkillInput",
                  # Not read-only: it changes what the session allows.
                  read_only=False, loading="always", permission="read"))
    register(Tool(vote=_tool_vote, name="SkillRead", handler=f"{h}:skill_read", input_model=f"{m}:SkillReadInput",
                  read_only=True, loading="deferred", permission="read"))
    register(Tool(vote=_tool_vote, name="SkillSearch", handler=f"{h}:skill_search", input_model=f"{m}:SkillSearchInput",
                  read_only=True, loading="deferred", permission="read"))
    if config.agent_managed:
        # The store is pegboard's own folder, not the working tree, hence
        # "read" like the other skill tools; subagents=False because a worker
        # handed one task has no business changing the person's skills.
        register(Tool(vote=_tool_vote, name="SkillWrite", handler=f"{h}:skill_write", input_model=f"{m}:SkillWriteInput",
                      loading="deferred", permission="read", subagents=False))
        register(Tool(vote=_tool_vote, name="SkillDelete", handler=f"{h}:skill_delete", input_model=f"{m}:SkillDeleteInput",
                      loading="deferred", permission="read", subagents=False))
    if config.scripts:
        s = f"{_MOD}._scripts"
        register(Tool(vote=_tool_vote, name="run_skill_script", handler=f"{s}:run_skill_script",
                      input_model=f"{s}:RunSkillScriptInput", loading="always", permission="unrestricted",
                      timeout_s=config.script_timeout_s + 30))


@hookimpl
def pegboard_tool_description(tool: Tool, context: PluginContext) -> str | None:
    """Skill's description: the shipped text plus the listing of skills.

    The core's override folders answer before this; the core's own reader of
    ``descriptions/`` answers after it and serves the other tools.
    """
    if tool.name != "Skill" or tool.plugin != context.name:
        return None
    from ._describe import describe_skill_tool

    return describe_skill_tool(context)


def _tool_vote(request: PermissionRequest) -> Vote | None:
    tool = request.tool
    if tool.name == "run_skill_script":
        skill = str(request.input.get("skill", ""))
        relpath = str(request.input.get("relpath", ""))
        return Vote.ask(f"run_skill_script runs {relpath!r} from skill {skill!r}",
                        suggest=(f"run_skill_script({skill}:{relpath})", f"run_skill_script({skill})"))
    if tool.name == "SkillWrite" and request.input.get("allowed_tools") is not None:
        # A skill's allowed-tools become grants when it runs: the model writing
        # them would be the model approving its own future calls.
        # Firm: no allow rule, permissive mode or auto-mode classifier decides
        # this one; the person answers.
        return Vote.ask(f"SkillWrite sets allowed-tools of {request.input.get('name')!r}, "
                        "which pre-approves tools whenever that skill is active", firm=True)
    return Vote.allow(f"{tool.name} works on pegboard's own skills folders")


@hookimpl
def pegboard_rule_matcher(rule: Rule) -> Any:
    from ._rules import compile_rule

    return compile_rule(rule)


@hookimpl
def pegboard_session_closed(session: PluginSession, context: PluginContext) -> None:
    from ._activation import deactivate

    deactivate(session.plugin_state(context.name))


@hookimpl
def pegboard_register_commands(cli: click.Group) -> None:
    from ._cli import skills_group

    cli.add_command(skills_group)


@hookimpl
def pegboard_doctor(config: SkillsConfig, context: PluginContext) -> Iterable[Any]:
    from ._describe import doctor_checks

    return doctor_checks(config, context)


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    """For ``pegboard plugins check skills``: skill names and prefixes."""
    from pegboard import RuleSamples

    return RuleSamples(
        rules=["Skill(pdf)", "Skill(deploy-*)", "Skill(deploy:*)", "Skill(*)", "SkillRead(pdf)"],
        calls=[("Skill", {"skill": "pdf"}), ("Skill", {"skill": "deploy-prod"}), ("Skill", {"skill": "other"}),
               ("SkillRead", {"name": "pdf"})],
    )

"""``pegboard skills list``: every skill, the shadowed ones and the broken ones."""

from __future__ import annotations

import json

import click

from pegboard.paths import config_dir

from ._catalog import PRECEDENCE, Catalog, default_sources, load_catalog, plugin_skill_dirs

__all__ = ["skills_group"]


def _catalog() -> Catalog:
    from pegboard.cli import current_state

    toolbox = current_state().toolbox()
    dirs, broken = plugin_skill_dirs(toolbox.hook)
    catalog = load_catalog(default_sources(config_dir(), toolbox.settings.root, dirs,
                                                  trusted=toolbox.settings.trusted))
    catalog.broken[:0] = broken
    return catalog


@click.group("skills")
def skills_group() -> None:
    """Skills: folders with a SKILL.md the model can start."""


@skills_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def skills_list(as_json: bool) -> None:
    """Every skill in effect, the ones a higher source shadows, and the ones that do not load.

    Exit status: 0 the skills listed; 2 a usage or configuration error."""
    catalog = _catalog()
    if as_json:
        click.echo(json.dumps(catalog.to_json(), indent=2))
        return
    click.echo(f"Precedence: {' > '.join(PRECEDENCE)}")
    if not catalog.skills:
        click.echo("No skills.")
    for skill in catalog:
        extra: list[str] = []
        if skill.allowed_tools:
            extra.append(f"allowed-tools: {', '.join(skill.allowed_tools)}")
        if not skill.model_invocable:
            extra.append("person only (disable-model-invocation)")
        tail = f" [{'; '.join(extra)}]" if extra else ""
        click.echo(f"{skill.name}  ({skill.origin})  {skill.path}{tail}")
        click.echo(f"    {_clip(skill.description)}")
    for item in catalog.shadowed:
        click.echo(f"shadowed: {item.skill.name} ({item.skill.origin}) {item.skill.path} "
                   f"-- {item.by.origin} skill {item.by.path} wins")
    for broken in catalog.broken:
        click.echo(f"broken: {broken.path or broken.origin} ({broken.origin}): {broken.reason}")


def _clip(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


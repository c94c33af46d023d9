"""The Skill tool's description (shipped text plus the skills listing) and doctor checks."""

from __future__ import annotations

import importlib.resources
from typing import Any

from pydantic import ValidationError

from pegboard import Check, PluginContext

from ._catalog import Catalog, default_sources, listing, load_catalog, plugin_skill_dirs

__all__ = ["catalog_for_context", "describe_skill_tool", "doctor_checks"]


def _config(context: PluginContext) -> Any:
    from . import SkillsConfig

    table = context.settings.plugin_options(context.name, SkillsConfig)
    try:
        return SkillsConfig.model_validate(table)
    except ValidationError:
        # The core reports a bad table when loading the plugin; the listing
        # just falls back to the defaults rather than failing the description.
        return SkillsConfig()


def catalog_for_context(context: PluginContext) -> Catalog:
    # PluginContext does not carry the plugin manager yet; when it does
    # (``hook``), plugin-shipped skills join the listing.
    dirs, broken = plugin_skill_dirs(getattr(context, "hook", None))
    catalog = load_catalog(default_sources(context.config_dir, context.root, dirs,
                                                  trusted=context.project_trusted))
    catalog.broken[:0] = broken
    return catalog


def describe_skill_tool(context: PluginContext) -> str:
    base = importlib.resources.files(context.package) / "descriptions" / "Skill.md"
    text = base.read_text(encoding="utf-8").strip()
    budget = _config(context).listing_budget
    return f"{text}\n\nAvailable skills:\n{listing(catalog_for_context(context), budget)}"


def doctor_checks(config: Any, context: PluginContext) -> list[Check]:
    catalog = catalog_for_context(context)
    checks = [Check(context.name, "ok", f"{len(catalog.skills)} skill(s) loaded, {len(catalog.shadowed)} shadowed")]
    for broken in catalog.broken:
        where = broken.path or broken.origin
        checks.append(Check(context.name, "warn", f"{where}: {broken.reason}"))
    return checks

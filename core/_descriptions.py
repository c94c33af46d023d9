"""The core's own description loaders: operator overrides first, the
plugin's ``descriptions/<Tool>.md`` last."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from ._config import config_dir
from ._hookspecs import hookimpl
from ._plugins import PluginContext
from ._tools import Tool

__all__ = ["DescriptionOverrides", "PackageDescriptions", "clip_summary"]

SUMMARY_LIMIT = 250


class DescriptionOverrides:
    """``<config dir>/descriptions/<Tool>.md``, then ``<project>/.pegboard/descriptions/<Tool>.md``."""

    @hookimpl(tryfirst=True)
    def pegboard_tool_description(self, tool: Tool, context: PluginContext) -> str | None:
        for folder in (config_dir() / "descriptions", context.root / ".pegboard" / "descriptions"):
            path = folder / f"{tool.name}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8").strip()
        return None


class PackageDescriptions:
    """The file the plugin ships, or the text it registered with the tool."""

    @hookimpl(trylast=True)
    def pegboard_tool_description(self, tool: Tool, context: PluginContext) -> str | None:
        package = context.package
        try:
            resource = importlib.resources.files(package) / "descriptions" / f"{tool.name}.md"
            if resource.is_file():
                return resource.read_text(encoding="utf-8").strip()
        except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, TypeError):
            # TypeError: a single-module plugin has no descriptions folder
            pass
        return tool.description


def clip_summary(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Whitespace folded, clipped to ``limit`` characters ending in ``…``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rstrip() + "…"


def override_dirs(root: Path) -> tuple[Path, Path]:
    return config_dir() / "descriptions", root / ".pegboard" / "descriptions"

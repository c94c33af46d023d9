"""The core's own description loaders: operator overrides first, the
plugin's ``descriptions/<Tool>.md`` last."""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

from ._config import Settings, config_dir
from ._hookspecs import hookimpl
from ._plugins import PluginContext
from ._tools import Tool

__all__ = ["DescriptionOverrides", "PackageDescriptions", "clip_summary"]

SUMMARY_LIMIT = 250


class DescriptionOverrides:
    """``<config dir>/descriptions/<Tool>.md``, then ``<project>/.pegboard/descriptions/<Tool>.md``.

    The project's folder is read only when the project is trusted (its text
    is what the model reads about a tool: a checkout must not rewrite it),
    and a file there counts only where it resolves inside the project.
    Untrusted, the overrides it holds are reported as ignored.
    """

    def __init__(self, settings: Settings) -> None:
        self.user = config_dir() / "descriptions"
        self.project: Path | None = None
        project = settings.root / ".pegboard" / "descriptions"
        if settings.trusted:
            self.project = project
        elif project.is_dir():
            for path in sorted(project.glob("*.md")):
                settings.report_ignored(path, f"description override of {path.stem}")
        self._inside = str(settings.root).rstrip("/") + "/"

    @hookimpl(tryfirst=True)
    def pegboard_tool_description(self, tool: Tool, context: PluginContext) -> str | None:
        path = self.user / f"{tool.name}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
        if self.project is None:
            return None
        path = self.project / f"{tool.name}.md"
        if not path.is_file():
            return None
        real = os.path.realpath(path)
        if not real.startswith(self._inside):
            context.settings.report_ignored(path, f"description override of {tool.name}", "outside",
                                            f"it is {real}")
            return None
        return Path(real).read_text(encoding="utf-8").strip()


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


"""The core's own description loaders: operator overrides first, the
plugin's ``descriptions/<Tool>.md`` last."""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

from .config import Settings, config_dir
from .._api.hookspecs import hookimpl
from .._api.plugin_context import PluginContext
from .._api.tools import Tool

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
        # The folders' file names, read once per toolbox: a toolbox with a
        # thousand MCP tools must not stat two missing files per tool.
        self._user_names = _names(self.user)
        self._project_names = _names(self.project) if self.project is not None else set()

    @hookimpl(tryfirst=True)
    def pegboard_tool_description(self, tool: Tool, context: PluginContext) -> str | None:
        file = f"{tool.name}.md"
        if file in self._user_names and (path := self.user / file).is_file():
            return path.read_text(encoding="utf-8").strip()
        if self.project is None or file not in self._project_names:
            return None
        path = self.project / file
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

    def __init__(self) -> None:
        self._shipped: dict[str, set[str]] = {}

    def _files(self, package: str) -> set[str]:
        """The names in a package's ``descriptions/`` folder, listed once."""
        names = self._shipped.get(package)
        if names is None:
            try:
                folder = importlib.resources.files(package) / "descriptions"
                names = {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()
            except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, TypeError, ValueError,
                    AttributeError):
                # TypeError: a single-module plugin has no descriptions folder; ValueError: an
                # object handed over in code has no package at all; AttributeError: one defined
                # in a script run as __main__, which has no module spec
                names = set()
            self._shipped[package] = names
        return names

    @hookimpl(trylast=True)
    def pegboard_tool_description(self, tool: Tool, context: PluginContext) -> str | None:
        package = context.package
        file = f"{tool.name}.md"
        if file in self._files(package):
            try:
                return (importlib.resources.files(package) / "descriptions" / file).read_text(encoding="utf-8").strip()
            except (OSError, ModuleNotFoundError, TypeError):
                pass
        return tool.description


def _names(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def clip_summary(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Whitespace folded, clipped to ``limit`` characters ending in ``…``."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1].rstrip() + "…"


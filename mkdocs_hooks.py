"""mkdocs hooks for pegboard's docs (mkdocs.yml names this file).

The reference is read from the source by griffe, which finds a package as a
folder of its name on a search path. pegboard's layout maps folders to
packages instead (core/ is ``pegboard``, plugins/ is ``pegboard.plugins``:
pyproject's package-dir), so before the build this lays out the installed
shape under build/griffe/ as symbolic links, and mkdocs.yml points the python
handler there. Nothing is copied: the pages are made from the files as they
are in the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parent
LAYOUT = ROOT / "build" / "griffe"


def lay_out(root: Path = ROOT, layout: Path = LAYOUT) -> Path:
    """``layout/pegboard/``: a link to each entry of core/, and ``plugins`` to plugins/."""
    package = layout / "pegboard"
    if layout.exists():
        shutil.rmtree(layout)
    package.mkdir(parents=True)
    for entry in (root / "core").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "plugins").symlink_to(root / "plugins")
    return layout


# Before mkdocstrings' own on_config: its python handler lists the search paths
# when it is made, and a build/griffe/ made after that is never searched (a fresh
# clone's first build found no pegboard at all).
@event_priority(100)
def on_config(config: Any) -> Any:
    lay_out(ROOT, _layout_of(config))
    return config


def _layout_of(config: Any) -> Path:
    """The python handler's first search path (mkdocs.yml: ``paths``), relative to the config file."""
    try:
        paths = config["plugins"]["mkdocstrings"].config["handlers"]["python"]["paths"]
    except (KeyError, TypeError):
        return LAYOUT
    base = Path(config["config_file_path"]).resolve().parent
    return base / paths[0] if paths else LAYOUT

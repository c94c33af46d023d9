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


def on_config(config: Any) -> Any:
    lay_out()
    return config

"""Installed distributions' entry points, read once: pegboard's plugins
(``pegboard``) and whether any distribution offers pydantic plugins.

pydantic scans every installed distribution's entry points for its own
plugin group when a process builds its first validator, and pegboard then
reads them all again for its own. The ``pegboard`` command reads them once,
when pydantic is imported and before its first model is built
(``prepare_command``, then ``quiet_pydantic_plugins`` where ``_config``
imports pydantic; a command that builds no model reads none): when no distribution declares
a ``pydantic`` entry point, pydantic is told what its own scan would find,
that there are none, and the first ``Toolbox.load`` takes the plugins found.
Nothing else changes: a pydantic plugin that is installed is found and
loaded by pydantic as always, ``PYDANTIC_DISABLE_PLUGINS`` is pydantic's to
read, and no environment variable is set for child processes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "installed_entry_points", "prepare_command", "quiet_pydantic_plugins"]

ENTRY_POINT_GROUP = "pegboard"
_PYDANTIC_GROUP = "pydantic"
# The command's scan at start, for the first Toolbox.load (taken once: a
# later load, in a host that may install plugins meanwhile, reads them again).
_FIRST: list[EntryPoint] | None = None
# Set by the pegboard command (prepare_command), until its first model reads the entry points.
_COMMAND = False


def installed_entry_points() -> list[EntryPoint]:
    """``entry_points(group="pegboard")``, parsing only the entry point
    files that name the group: the standard library parses every installed
    distribution's file to select one group (about 18M instructions with
    236 distributions; reading them all is a third of that). As it does, the
    first distribution of a name on the path wins. tests/test_core_plugins.py
    holds the two to the same answer."""
    global _FIRST
    found, _FIRST = _FIRST, None
    return found if found is not None else _scan()[0]


def _scan() -> tuple[list[EntryPoint], bool]:
    """pegboard's entry points, and whether any distribution's entry point
    file has a ``[pydantic]`` section."""
    from importlib.metadata import distributions, entry_points  # a warm `tools list` never needs it

    found: list[EntryPoint] = []
    seen: set[str] = set()
    pydantic = False
    for dist in distributions():
        name = getattr(dist, "_normalized_name", None)  # how entry_points() tells distributions apart
        if not isinstance(name, str):
            return list(entry_points(group=ENTRY_POINT_GROUP)), True
        if name in seen:
            continue
        seen.add(name)
        text = dist.read_text("entry_points.txt")
        if not text:
            continue
        # A file without the group's name has no section for it.
        if ENTRY_POINT_GROUP in text:
            found.extend(dist.entry_points.select(group=ENTRY_POINT_GROUP))
        if not pydantic and _PYDANTIC_GROUP in text:
            pydantic = bool(dist.entry_points.select(group=_PYDANTIC_GROUP))
    return found, pydantic


def prepare_command() -> None:
    """For the ``pegboard`` command: its first model (``_config``) reads the
    entry points once (``quiet_pydantic_plugins``). A command that builds
    no model (a warm ``tools list``) reads nothing."""
    global _COMMAND
    _COMMAND = True


def quiet_pydantic_plugins() -> None:
    """In the ``pegboard`` command, once pydantic is imported and before a
    model is built: read the entry points once (see the module's note)."""
    global _COMMAND, _FIRST
    if not _COMMAND:
        return
    _COMMAND = False
    found, pydantic = _scan()
    _FIRST = found
    if pydantic or os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic: it scans for itself
        return
    if getattr(_loader, "_plugins", False) is None:  # not scanned yet: the answer its scan would give
        _loader._plugins = {}

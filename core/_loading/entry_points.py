"""Installed distributions' entry points, read once: pegboard's plugins
(``pegboard``) and whether any distribution offers pydantic plugins.

pydantic scans every installed distribution's entry points for its own
plugin group when a process builds its first validator, and pegboard then
reads them all again for its own (and each plugin distribution's METADATA
for its name and version). The ``pegboard`` command does that once, when
pydantic is imported and before its first model is built
(``prepare_command``, then ``quiet_pydantic_plugins`` where ``_config``
imports pydantic; a command that builds no model reads none), and keeps
what it found for the next command (``<config dir>/cache/entrypoints-*``),
keyed on the interpreter and the modification time of every ``sys.path``
folder (an install, upgrade or removal of a distribution changes its
folder's). When no distribution declares a ``pydantic`` entry point,
pydantic is told what its own scan would find, that there are none, and the
first ``Toolbox.load`` takes the plugins found.

Nothing else changes: a pydantic plugin that is installed is found and
loaded by pydantic as always, ``PYDANTIC_DISABLE_PLUGINS`` is pydantic's to
read, and no environment variable is set for child processes. What is kept
names modules to import, so it is kept where the configuration is, which
the file tools and the shell's sandbox protect, and only a file of the
person's own is read back (as ``_layercache``'s entries).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple
from .._util.atomic import atomic_write
from .._util.folders import config_dir
from .layer_cache import stamp
from .._util.path_facts import resolve_path

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "Installed", "installed_entry_points", "installed_plugins", "prepare_command",
           "quiet_pydantic_plugins"]

ENTRY_POINT_GROUP = "pegboard"
_PYDANTIC_GROUP = "pydantic"
_FORMAT = 1


class Installed(NamedTuple):
    """One installed plugin's entry point, with its distribution's name and version."""

    name: str
    value: str
    distribution: str | None
    version: str | None

    def load(self) -> Any:
        """Import what the entry point names."""
        from importlib.metadata import EntryPoint

        return EntryPoint(self.name, self.value, ENTRY_POINT_GROUP).load()


# The command's plugins, read (or kept) at start, for the first Toolbox.load
# (taken once: a later load, in a host that may install plugins meanwhile,
# reads them again).
_FIRST: list[Installed] | None = None
# Set by the pegboard command (prepare_command), until its first model reads the entry points.
_COMMAND = False


def installed_plugins() -> list[Installed]:
    """pegboard's entry points, with their distributions' names and versions."""
    global _FIRST
    found, _FIRST = _FIRST, None
    return found if found is not None else _installed(_scan()[0])


def installed_entry_points() -> list[EntryPoint]:
    """``entry_points(group="pegboard")``, parsing only the entry point
    files that name the group: the standard library parses every installed
    distribution's file to select one group (about 18M instructions with
    236 distributions; reading them all is a third of that). As it does, the
    first distribution of a name on the path wins. tests/core/loading/test_core_plugins.py
    holds the two to the same answer."""
    return _scan()[0]


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


def _installed(eps: list[EntryPoint]) -> list[Installed]:
    # A distribution's name and version, read once for all its entry points:
    # each ``dist.metadata`` reads and parses its METADATA file again.
    names: dict[int, tuple[str | None, str | None]] = {}
    out = []
    for ep in eps:
        dist = ep.dist
        if dist is None:
            name, version = None, None
        elif id(dist) in names:
            name, version = names[id(dist)]
        else:
            metadata = dist.metadata
            name, version = names[id(dist)] = metadata["Name"], metadata["Version"]
        out.append(Installed(ep.name, ep.value, name, version))
    return out


def prepare_command() -> None:
    """For the ``pegboard`` command: its first model (``_config``) reads the
    entry points once (``quiet_pydantic_plugins``). A command that builds
    no model (a warm ``tools list``) reads nothing."""
    global _COMMAND
    _COMMAND = True


def quiet_pydantic_plugins() -> None:
    """In the ``pegboard`` command, once pydantic is imported and before a
    model is built: the entry points read once, or as kept (see the module's
    note)."""
    global _COMMAND, _FIRST
    if not _COMMAND:
        return
    _COMMAND = False
    found, pydantic = _kept()
    _FIRST = found
    if pydantic or os.environ.get("PYDANTIC_DISABLE_PLUGINS") is not None:
        return
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic: it scans for itself
        return
    if getattr(_loader, "_plugins", False) is None:  # not scanned yet: the answer its scan would give
        _loader._plugins = {}


def _kept() -> tuple[list[Installed], bool]:
    """What the last command found, when nothing it depends on changed; else read now, and kept."""
    import hashlib
    import json
    import sys

    key = [_FORMAT, sys.executable, [[p, stamp(p)] for p in sys.path]]
    digest = hashlib.sha256(sys.executable.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    path = config_dir() / "cache" / f"entrypoints-{digest}.json"
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_uid != os.geteuid():
                raise OSError("not the person's own")
            data = json.loads(handle.read())
        if data["key"] == json.loads(json.dumps(key)):
            return [Installed(*entry) for entry in data["plugins"]], bool(data["pydantic"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    eps, pydantic = _scan()
    found = _installed(eps)

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(resolve_path(path, path.parent),
                     json.dumps({"key": key, "plugins": [list(i) for i in found], "pydantic": pydantic}),
                     default_mode=0o600)
    except (OSError, ValueError):
        pass  # kept or not, only the next command's speed depends on it
    return found, pydantic

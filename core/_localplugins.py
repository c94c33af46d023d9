"""Plugins that are not installed: one-file plugins in the user's config
folder, and plugin objects handed to ``Toolbox.load`` in code.

A Python file in ``<config dir>/plugins/`` is a plugin named after the file
(``greet.py`` is plugin ``greet``), imported as ``pegboard_local.<name>``,
so its ``"module:attr"`` handlers resolve like an installed plugin's. Only
the person's own config folder is looked at: a checkout cannot add code this
way, trusted or not. A file (or the folder) that another user could have
written is refused, as ssh refuses a key file others can write.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._records import record

if TYPE_CHECKING:
    from ._config import Settings

__all__ = ["LOCAL_PACKAGE", "LOCAL_FOLDER", "Source", "given_sources", "local_sources"]

LOCAL_PACKAGE = "pegboard_local"
LOCAL_FOLDER = "plugins"


@record(frozen=True)
class Source:
    """Where one plugin comes from, before it is imported."""

    name: str
    module: str
    load: Callable[[], object]
    distribution: str | None = None
    version: str | None = None
    origin: Literal["entry point", "local", "given"] = "entry point"
    file: str | None = None

    def __init__(self, name: str, module: str, load: Callable[[], object], distribution: str | None = None,
                 version: str | None = None, origin: Literal["entry point", "local", "given"] = "entry point",
                 file: str | None = None) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "module", module)
        _set(self, "load", load)
        _set(self, "distribution", distribution)
        _set(self, "version", version)
        _set(self, "origin", origin)
        _set(self, "file", file)

    @property
    def label(self) -> str:
        """What failed to import, for the plugin's error line."""
        return self.file or self.module


def local_sources(config_dir: Path, settings: Settings) -> list[Source]:
    """The one-file plugins in ``<config dir>/plugins/``, by file name.
    Files whose names start with ``_`` or ``.`` are not plugins (helpers a
    plugin may import as ``pegboard_local._helper``)."""
    folder = config_dir / LOCAL_FOLDER
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in names:
        if not entry.endswith(".py") or entry.startswith(("_", ".")):
            continue
        path = folder / entry
        name = entry[:-3]
        if not name.isidentifier():
            settings.problems.append(f"{path}: not loaded: a local plugin's file name must be a Python "
                                     "identifier (letters, digits and _), as it is imported by that name")
            continue
        found.append(Source(name, f"{LOCAL_PACKAGE}.{name}", _file_loader(path, name), origin="local",
                            file=str(path)))
    return found


def given_sources(given: Mapping[str, object]) -> Iterator[Source]:
    """Plugins handed over in code: a module, any object with hook
    implementations (a class or an instance), or an import string
    ``"package.module"`` / ``"package.module:attribute"`` imported when the
    toolbox loads (a failure is that plugin's error, like an entry point's)."""
    for name, obj in given.items():
        if isinstance(obj, str):
            module = obj.partition(":")[0]
            yield Source(name, module, _import_loader(obj), origin="given")
        else:
            module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "") or ""
            yield Source(name, module, _constant(obj), origin="given")


def _constant(obj: object) -> Callable[[], object]:
    return lambda: obj


def _import_loader(ref: str) -> Callable[[], object]:
    def load() -> object:
        module_name, _, attr = ref.partition(":")
        obj: object = importlib.import_module(module_name)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
        return obj

    return load


class UnsafePluginFile(Exception):
    """A local plugin file that someone other than the person could have written."""


def _check_ownership(path: Path) -> None:
    me = os.getuid()
    for item in (path.parent, path):
        st = os.stat(item)
        if st.st_uid not in (me, 0):
            raise UnsafePluginFile(f"{item} belongs to another user (uid {st.st_uid}); only your own files load")
        if st.st_mode & 0o002:
            raise UnsafePluginFile(f"{item} is writable by every user; run `chmod o-w {item}`")


def _file_loader(path: Path, name: str) -> Callable[[], object]:
    def load() -> object:
        _check_ownership(path)
        st = os.stat(path)
        stamp = (str(path), st.st_mtime_ns, st.st_size)
        package = sys.modules.get(LOCAL_PACKAGE)
        if package is None:
            package = types.ModuleType(LOCAL_PACKAGE, "The user's one-file pegboard plugins.")
            sys.modules[LOCAL_PACKAGE] = package
        # The folder is the user's config folder of the moment (tests change it).
        package.__path__ = [str(path.parent)]
        qualified = f"{LOCAL_PACKAGE}.{name}"
        known = sys.modules.get(qualified)
        if known is not None and getattr(known, "__pegboard_stamp__", None) == stamp:
            return known
        spec = importlib.util.spec_from_file_location(qualified, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        module.__pegboard_stamp__ = stamp  # type: ignore[attr-defined]
        sys.modules[qualified] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(qualified, None)
            raise
        return module

    return load

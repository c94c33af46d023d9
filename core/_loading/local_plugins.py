"""Plugins that are not installed: one-file plugins in the user's config
folder, and plugin objects handed to ``Toolbox.load`` in code.

A Python file in ``<config dir>/plugins/`` is a plugin named after the file
(``greet.py`` is plugin ``greet``), imported as ``pegboard_local.<name>``,
so its ``"module:attr"`` handlers resolve like an installed plugin's. Only
the person's own config folder is looked at: a checkout cannot add code this
way, trusted or not. A file, or a folder from it up to the plugins folder,
that anyone but the person (or root) could have written is refused, as ssh
refuses a key file others can write; so is every module a plugin imports
from that folder (``pegboard_local._helper``), when it is imported. They are
compiled from their source each time: nothing is read from or written to
``__pycache__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import TYPE_CHECKING, Literal


if TYPE_CHECKING:
    from .config import Settings

__all__ = ["LOCAL_PACKAGE", "LOCAL_FOLDER", "Source", "given_sources", "local_sources"]

LOCAL_PACKAGE = "pegboard_local"
LOCAL_FOLDER = "plugins"


@dataclass(frozen=True, slots=True)
class Source:
    """Where one plugin comes from, before it is imported."""

    name: str
    module: str
    load: Callable[[], object]
    distribution: str | None = None
    version: str | None = None
    origin: Literal["entry point", "local", "given"] = "entry point"
    file: str | None = None

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


class UnsafePluginFile(ImportError):
    """A local plugin file, or a folder it is in, that someone other than the
    person could have written."""


def _check_item(item: Path, st: os.stat_result) -> None:
    if st.st_uid not in (os.geteuid(), 0):
        raise UnsafePluginFile(f"{item} belongs to another user (uid {st.st_uid}); only your own files load")
    if st.st_mode & 0o002:
        raise UnsafePluginFile(f"{item} is writable by every user; run `chmod o-w {item}`")
    if st.st_mode & 0o020:
        raise UnsafePluginFile(f"{item} is writable by its group; run `chmod g-w {item}`")


def _check_folders(path: Path, top: Path) -> None:
    """Every folder from ``path``'s up to ``top`` (the plugins folder), and ``top`` itself."""
    folder = path.parent
    while True:
        _check_item(folder, os.stat(folder))
        if folder == top or folder == folder.parent:
            return
        folder = folder.parent


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Loads a module of the plugins folder from its source, checked as it is
    read: never from ``__pycache__`` (a planted ``.pyc`` for an unchanged
    source would otherwise run, whatever ``sys.dont_write_bytecode`` says),
    and never writing one there."""

    def __init__(self, fullname: str, path: str, top: Path) -> None:
        super().__init__(fullname, path)
        self.top = top

    def get_code(self, fullname: str) -> types.CodeType:
        path = Path(self.get_filename(fullname))
        _check_folders(path, self.top)
        # The file's owner and mode are those of what is read (fstat of the
        # open file), not of whatever the name pointed to a moment before.
        with open(path, "rb") as fh:
            _check_item(path, os.fstat(fh.fileno()))
            source = fh.read()
        # The standard get_code is what reads and writes __pycache__: none of it runs here.
        return self.source_to_code(source, str(path))


class _LocalFinder(importlib.abc.MetaPathFinder):
    """Finds every ``pegboard_local.*`` module in the plugins folder of the
    moment, as source only, each checked by ``_SourceOnlyLoader``: a helper
    a plugin imports (at import or inside a handler, later) is held to what
    the plugin's own file is. Nothing else finds these names: the package's
    ``__path__`` is empty, so neither a ``.pyc`` without source nor an
    extension module beside the plugins is ever loaded."""

    folder: Path | None = None

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith(LOCAL_PACKAGE + ".") or self.folder is None:
            return None
        parts = fullname.split(".")[1:]
        base = self.folder.joinpath(*parts)
        for candidate, package in ((base / "__init__.py", True), (base.with_name(base.name + ".py"), False)):
            if candidate.is_file():
                loader = _SourceOnlyLoader(fullname, str(candidate), self.folder)
                return importlib.util.spec_from_file_location(
                    fullname, candidate, loader=loader,
                    submodule_search_locations=[] if package else None)
        raise ModuleNotFoundError(f"No module named {fullname!r} (no {base}.py in {self.folder})", name=fullname)


_FINDER = _LocalFinder()


def _local_package(folder: Path) -> types.ModuleType:
    package = sys.modules.get(LOCAL_PACKAGE)
    if package is None:
        package = types.ModuleType(LOCAL_PACKAGE, "The user's one-file pegboard plugins.")
        sys.modules[LOCAL_PACKAGE] = package
    # Empty: only _FINDER finds the package's modules (see there).
    package.__path__ = []
    if _FINDER.folder != folder:
        # The folder is the user's config folder of the moment (tests change
        # it): a helper imported from another folder is not this one's.
        for name in [n for n in sys.modules if n.startswith(LOCAL_PACKAGE + ".")]:
            file = getattr(sys.modules[name], "__file__", None)
            if not file or not Path(file).is_relative_to(folder):
                del sys.modules[name]
                if name.count(".") == 1:  # `from pegboard_local import x` looks at the package first
                    package.__dict__.pop(name.partition(".")[2], None)
        _FINDER.folder = folder
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    return package


def _file_loader(path: Path, name: str) -> Callable[[], object]:
    def load() -> object:
        _local_package(path.parent)
        st = os.stat(path)
        stamp = (str(path), st.st_mtime_ns, st.st_size)
        qualified = f"{LOCAL_PACKAGE}.{name}"
        known = sys.modules.get(qualified)
        if known is not None and getattr(known, "__pegboard_stamp__", None) == stamp:
            _check_folders(path, path.parent)
            _check_item(path, os.stat(path))
            return known
        spec = _FINDER.find_spec(qualified)
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

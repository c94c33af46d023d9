"""Where agent definitions are read from, in precedence order.

Apart from ``_definitions`` (parsing, five dataclasses, the regexes) because
registering the tools needs only the folders, to watch them: a start-up that
never reads a definition does not build the parser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import FrozenInstanceError
from pathlib import Path

__all__ = ["BUILT_IN_DIR", "Source", "sources_for"]

BUILT_IN_DIR = Path(__file__).parent / "agents"


class Source:
    """One folder agent definitions are read from (``kind``: "project", "user",
    "plugin:<name>", "built-in"), and why it is not read when it is not.

    Frozen, and compared, hashed and shown by its fields, as the frozen
    dataclass it was; its methods are written out because ``@dataclass``
    compiles them at import, about 3M instructions of every start-up
    (tests/test_subtasks_definitions.py holds it to the dataclass)."""

    kind: str
    folder: Path
    readable: bool
    why_not: str

    def __init__(self, kind: str, folder: Path, readable: bool = True, why_not: str = "") -> None:
        _set = object.__setattr__
        _set(self, "kind", kind)
        _set(self, "folder", folder)
        _set(self, "readable", readable)
        _set(self, "why_not", why_not)

    def _fields(self) -> tuple[str, Path, bool, str]:
        return (self.kind, self.folder, self.readable, self.why_not)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"{self.__class__.__qualname__}(kind={self.kind!r}, folder={self.folder!r}, "
                f"readable={self.readable!r}, why_not={self.why_not!r})")

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def sources_for(config_dir: Path, root: Path, trusted: bool,
                plugin_dirs: Iterable[tuple[str, Path]] = ()) -> list[Source]:
    """The sources in precedence order (highest first)."""
    project = root / ".pegboard" / "agents"
    sources = [Source("project", project, trusted,
                      "" if trusted else "the project is not trusted (pegboard trust), so its agents are not read"),
               Source("user", config_dir / "agents")]
    sources += [Source(f"plugin:{name}", Path(folder)) for name, folder in plugin_dirs]
    sources.append(Source("built-in", BUILT_IN_DIR))
    return sources

"""Where agent definitions are read from, in precedence order.

Apart from ``_definitions`` (parsing, five dataclasses, the regexes) because
registering the tools needs only the folders, to watch them: a start-up that
never reads a definition does not build the parser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BUILT_IN_DIR", "Source", "sources_for"]

BUILT_IN_DIR = Path(__file__).parent / "agents"


@dataclass(frozen=True)
class Source:
    kind: str
    folder: Path
    readable: bool = True
    why_not: str = ""


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

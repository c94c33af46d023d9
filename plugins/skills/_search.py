"""SkillSearch's engine: a regular expression over every line of every skill.

This is what reaches the skills the size-capped listing left out, and what
answers "which skill covers this" when one-line descriptions do not. It reads
``SKILL.md`` (front matter and body) and the other text files a skill ships
(references, templates, scripts), so a match in ``reference.md`` is found too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ._catalog import Catalog
from ._skill import Skill

__all__ = ["Match", "search", "skill_files"]

MAX_FILE_BYTES = 512 * 1024
MAX_FILES_PER_SKILL = 200
# Long lines are clipped before matching: minified files would otherwise cost
# a lot of regex time and return one useless giant line.
MAX_LINE_CHARS = 2000
SHOWN_LINE_CHARS = 300


@dataclass(frozen=True)
class Match:
    skill: str
    path: Path
    line: int
    text: str

    def format(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def skill_files(skill: Skill) -> Iterator[Path]:
    """``SKILL.md`` first, then the skill's other files, sorted, hidden ones
    skipped, never leaving the skill's folder (symlinked files are followed
    only when they resolve inside it)."""
    base = skill.base_dir
    real_base = Path(os.path.realpath(base))
    yield skill.path
    count = 1
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.startswith(".") or path == skill.path:
                continue
            real = Path(os.path.realpath(path))
            if not real.is_relative_to(real_base):
                continue
            count += 1
            if count > MAX_FILES_PER_SKILL:
                return
            yield path


def _text_lines(path: Path) -> list[str] | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None  # binary
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def search(catalog: Catalog, pattern: re.Pattern[str], limit: int) -> tuple[list[Match], bool]:
    """Matches in skill order, at most ``limit``; the flag says more existed."""
    matches: list[Match] = []
    for skill in catalog:
        for path in skill_files(skill):
            lines = _text_lines(path)
            if lines is None:
                continue
            for number, line in enumerate(lines, start=1):
                if pattern.search(line[:MAX_LINE_CHARS]):
                    if len(matches) >= limit:
                        return matches, True
                    shown = line.strip()
                    if len(shown) > SHOWN_LINE_CHARS:
                        shown = shown[: SHOWN_LINE_CHARS - 1] + "…"
                    matches.append(Match(skill.name, path, number, shown))
    return matches, False


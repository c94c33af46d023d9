"""The pure-Python file walk that stands in for ripgrep's.

It reproduces what ``rg --no-require-git --no-ignore-global --sort path``
visits, so both Grep backends see the same files: hidden names are skipped,
symlinks are not followed (nor are symlinked files searched), and ignore
files apply gitignore-style with ripgrep's precedence: deeper directories
over shallower ones, and within one directory ``.rgignore`` over ``.ignore``
over ``.gitignore`` (then ``.git/info/exclude``). Ignore files in the parents
of the search root apply too, as they do for ripgrep.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pathspec

__all__ = ["glob_regex", "walk_files"]

# lowest precedence first; a later file in the same directory wins
_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")


@dataclass(frozen=True)
class _Layer:
    base: Path
    spec: pathspec.GitIgnoreSpec


def _load(directory: Path) -> list[_Layer]:
    layers: list[_Layer] = []
    exclude = directory / ".git" / "info" / "exclude"
    for source in (exclude, *(directory / name for name in _IGNORE_FILES)):
        try:
            lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        try:
            layers.append(_Layer(directory, pathspec.GitIgnoreSpec.from_lines(lines)))
        except Exception:  # a broken line makes ripgrep skip that pattern; skip the file rather than fail
            continue
    return layers


def _ignored(path: Path, is_dir: bool, layers: list[_Layer]) -> bool:
    # highest precedence is last: walk backwards and stop at the first verdict
    for layer in reversed(layers):
        rel = path.relative_to(layer.base).as_posix()
        result = layer.spec.check_file(rel + "/" if is_dir else rel)
        if result.include is not None:
            return bool(result.include)
    return False


def _parent_layers(root: Path) -> list[_Layer]:
    layers: list[_Layer] = []
    for parent in reversed(root.parents):
        layers.extend(_load(parent))
    return layers


def walk_files(root: Path, *, hidden: bool = False) -> Iterator[Path]:
    """Files under ``root`` (resolved) in ripgrep's ``--sort path`` order.

    ``hidden``: include dot-files and dot-folders (``rg --hidden``), except ``.git``.
    """
    yield from _walk(root, _parent_layers(root) + _load(root), hidden)


def _walk(directory: Path, layers: list[_Layer], hidden: bool) -> Iterator[Path]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # unreadable folders are skipped, as ripgrep does (it only warns)
    for entry in entries:
        if entry.name.startswith(".") and (not hidden or entry.name == ".git"):
            continue
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        path = directory / entry.name
        if stat.S_ISDIR(mode):
            if not _ignored(path, True, layers):
                yield from _walk(path, layers + _load(path), hidden)
        elif stat.S_ISREG(mode) and not _ignored(path, False, layers):
            yield path


# --- globs -------------------------------------------------------------------------


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex on ``/``-separated relative paths.

    ``*`` and ``?`` stay within one component, ``**`` spans any number of
    them, ``[abc]`` is a class and ``{a,b}`` alternatives (nestable).
    """
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def _translate(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    depth = 0
    while i < n:
        c = pat[i]
        if c == "*":
            if pat.startswith("**", i):
                at_start = i == 0 or pat[i - 1] == "/"
                j = i + 2
                if at_start and (j == n or pat[j] == "/"):
                    # "**/" matches zero or more whole components; a final "**" anything
                    if j == n:
                        out.append(".*")
                        i = j
                    else:
                        out.append("(?:.*/)?")
                        i = j + 1
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1:i + 2] in ("!", "^") else i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pat[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pat[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)

"""The pure-Python file walk that stands in for ripgrep's.

It reproduces what ``rg --no-require-git --no-ignore-global --sort path``
visits, so both Grep backends see the same files: hidden names are skipped,
symlinks are not followed (nor are symlinked files searched), and ignore
files apply gitignore-style with ripgrep's precedence: ``.rgignore`` over
``.ignore`` over ``.gitignore`` (then ``.git/info/exclude``) wherever they
are, and within one kind deeper directories over shallower ones; git's files
stop at a repository's root. Ignore files in the parents of the search root
apply too, as they do for ripgrep.
"""

from __future__ import annotations

import bisect
import operator
import os
import re
import stat
from collections.abc import Container, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pathspec

__all__ = ["Filters", "Found", "brace_expand", "glob_regex", "walk", "walk_files"]

# Lowest precedence first, as ripgrep's ignore crate ranks them (dir.rs
# matched_ignore): any .rgignore, above or below, beats any .ignore, which
# beats any .gitignore, then .git/info/exclude; within a kind the deepest
# folder's file decides. The first two kinds are git's: those of folders above
# a repository's root (a folder holding .git) do not apply inside it.
_KINDS = (".git/info/exclude", ".gitignore", ".ignore", ".rgignore")
_GIT_KINDS = 2
# A file this big is looked at for a NUL byte (binary) in its first bytes before it is read
_PEEK_FROM, _PEEK = 1 << 16, 1 << 13


@dataclass(frozen=True)
class _Layer:
    base: Path
    spec: pathspec.GitIgnoreSpec
    kind: int  # its name's place in _KINDS
    depth: int  # of base


def _stacked(layers: list[_Layer], own: list[_Layer], has_git: bool) -> list[_Layer]:
    """``layers`` (those of the folders above) with a folder's ``own``, in
    the order ``_verdict`` reads backwards: by kind, then by depth."""
    if has_git:
        layers = [layer for layer in layers if layer.kind >= _GIT_KINDS]
    if not own:
        return layers
    return sorted(layers + own, key=_by_rank)


def _read_text(directory: Path, name: str, dfd: int | None) -> str:
    if dfd is None:
        return (directory / name).read_text(encoding="utf-8", errors="replace")
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        return f.read().decode("utf-8", errors="replace")


def _load(directory: Path, dfd: int | None = None, listed: Container[str] | None = None) -> list[_Layer]:
    """The ignore files of ``directory``; ``listed``: the names its listing
    shows (its dot-names will do), where a file it lacks is not tried (most
    folders have none, and an open that fails is a system call)."""
    layers: list[_Layer] = []
    for kind, name in enumerate(_KINDS):
        if listed is not None and name.partition("/")[0] not in listed:
            continue
        try:
            # .git/info/exclude only shapes what is skipped, so a plain path open will do for it
            lines = _read_text(directory, name, None if "/" in name else dfd).splitlines()
        except OSError:
            continue
        try:
            layers.append(_Layer(directory, pathspec.GitIgnoreSpec.from_lines(lines), kind, len(directory.parts)))
        except Exception:  # a broken line makes ripgrep skip that pattern; skip the file rather than fail
            continue
    return layers


_by_name = operator.attrgetter("name")
_by_rank = operator.attrgetter("kind", "depth")


def _dot_names(entries: list[os.DirEntry[str]]) -> set[str]:
    """The names in ``entries`` (sorted by name) that start with a dot: a slice, "/" following "."."""
    return {entry.name for entry in entries[bisect.bisect_left(entries, ".", key=_by_name):
                                            bisect.bisect_left(entries, "/", key=_by_name)]}


def _verdict(path: Path, is_dir: bool, layers: list[_Layer]) -> bool | None:
    """True: ignored; False: whitelisted by a ``!pattern``; None: no ignore file says anything."""
    # highest precedence is last: walk backwards and stop at the first verdict
    for layer in reversed(layers):
        rel = path.relative_to(layer.base).as_posix()
        result = layer.spec.check_file(rel + "/" if is_dir else rel)
        if result.include is not None:
            return bool(result.include)
    return None


class Filters:
    """``--glob`` and ``--type`` as ripgrep's ignore crate applies them.

    Its order (ignore/src/dir.rs ``matched``): a glob that matches decides
    outright, over ignore files and hidden-ness; then ignore files; then the
    type; and a file is skipped for being hidden only if nothing whitelisted it.
    """

    def __init__(self, root: Path, glob: str | None = None, types: tuple[str, ...] = ()) -> None:
        self.root = root
        self.negated = bool(glob) and glob.startswith("!")  # type: ignore[union-attr]
        body = glob[1:] if glob and self.negated else glob
        self.glob = pathspec.GitIgnoreSpec.from_lines(brace_expand(body)) if body else None
        self.types = pathspec.GitIgnoreSpec.from_lines(types) if types else None

    def override(self, path: Path, is_dir: bool) -> bool | None:
        if self.glob is None:
            return None
        rel = path.relative_to(self.root).as_posix()
        if self.glob.match_file(rel + "/" if is_dir else rel):
            return self.negated  # a plain glob whitelists (False), "!glob" ignores (True)
        if not self.negated and not is_dir:
            return True  # files must match a plain glob
        return None

    def type_verdict(self, path: Path, is_dir: bool) -> bool | None:
        if self.types is None or is_dir:
            return None
        return not self.types.match_file(path.name)


def _skip(path: Path, is_dir: bool, layers: list[_Layer], hidden: bool, filters: Filters | None) -> bool:
    if filters is not None and (o := filters.override(path, is_dir)) is not None:
        return o
    whitelisted = False
    verdict = _verdict(path, is_dir, layers)
    if verdict:
        return True
    whitelisted = verdict is False
    if filters is not None and (t := filters.type_verdict(path, is_dir)) is not None:
        if t:
            return True
        whitelisted = True
    return not whitelisted and not hidden and path.name.startswith(".")


def _parent_layers(root: Path) -> list[_Layer]:
    layers: list[_Layer] = []
    for parent in reversed(root.parents):
        layers = _stacked(layers, _load(parent), os.path.exists(parent / ".git"))
    return layers


class Found:
    """A file the walk found, with the fd of the folder it was found in.

    ``read`` opens it relative to that fd with O_NOFOLLOW: a name swapped for a
    symlink after the folder was listed fails instead of being followed.
    """

    __slots__ = ("directory", "dir_fd", "name")

    def __init__(self, directory: Path, dir_fd: int, name: str) -> None:
        self.directory = directory
        self.dir_fd = dir_fd
        self.name = name

    @property
    def path(self) -> Path:
        # Built on demand: most files a search visits have no match, and a
        # Path per file was a seventh of the Python engine's time.
        return self.directory / self.name

    def read(self) -> bytes:
        data = self._read(False)
        assert data is not None
        return data

    def read_unless_binary(self) -> bytes | None:
        """``read``, or None for a file of 64 KiB or more whose first 8 KiB
        hold a NUL byte (ripgrep too skips a binary file it walked to): the
        rest of such a file, a static library of 45 MB in the standard
        library, is never read. A NUL byte elsewhere, or in a smaller file,
        is the caller's to look for."""
        return self._read(True)

    def _read(self, stop_at_binary: bool) -> bytes | None:
        fd = os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=self.dir_fd)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(f"{self.path} is no longer a regular file")
            # pread leaves the offset at 0 for the read below: the peeked
            # bytes are read again rather than joined to the rest, a copy of
            # the whole file
            if stop_at_binary and info.st_size >= _PEEK_FROM and b"\x00" in os.pread(fd, _PEEK, 0):
                return None
            # Reads until end of file, the first one of the size fstat gave
            # (the file may have grown since): no buffered file object.
            data = os.read(fd, info.st_size + 1)
            if len(data) == info.st_size:
                return data  # one byte short of what was asked: the end of the file
            rest = os.read(fd, 1 << 20) if data else b""
            if not rest:
                return data
            chunks = [data, rest]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


def walk(root: Path, *, hidden: bool = False, filters: Filters | None = None) -> Iterator[Found]:
    """Files under ``root`` (resolved) in ripgrep's ``--sort path`` order.

    Folders are entered through fds opened with O_NOFOLLOW, starting from a
    root reached the same way, so a folder swapped for a symlink mid-walk is
    skipped rather than followed out of the tree. ``hidden``: include
    dot-files and dot-folders (``rg --hidden``); ``.git`` stays out.
    """
    from ._safeio import open_dir_readable

    try:
        dfd = open_dir_readable(root)
    except OSError:
        return
    try:
        yield from _walk(dfd, root, _parent_layers(root), hidden, filters)
    finally:
        os.close(dfd)


def walk_files(root: Path, *, hidden: bool = False, filters: Filters | None = None) -> Iterator[Path]:
    for found in walk(root, hidden=hidden, filters=filters):
        yield found.path


def _walk(dfd: int, directory: Path, layers: list[_Layer], hidden: bool, filters: Filters | None
          ) -> Iterator[Found]:
    """``layers``: those of the folders above; this one's are added from its listing."""
    try:
        with os.scandir(dfd) as it:
            entries = sorted(it, key=_by_name)
    except OSError:
        return  # unreadable folders are skipped, as ripgrep does (it only warns)
    dots = _dot_names(entries)
    layers = _stacked(layers, _load(directory, dfd, dots), ".git" in dots)
    # Nothing to match a path against: the name alone decides.
    plain = not layers and (filters is None or (filters.glob is None and filters.types is None))
    for entry in entries:
        name = entry.name
        if name == ".git":
            continue
        try:
            # The folder listing's file type (no system call where the file
            # system reports one); a symlink is neither a folder nor a file.
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if not (is_dir or is_file):
            continue
        if plain:
            if not hidden and name.startswith("."):
                continue
        elif _skip(directory / name, is_dir, layers, hidden, filters):
            continue
        if is_dir:
            try:
                nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
            except OSError:
                continue  # gone, unreadable, or swapped for a symlink since it was listed
            try:
                path = directory / name
                yield from _walk(nfd, path, layers, hidden, filters)
            finally:
                os.close(nfd)
        else:
            yield Found(directory, dfd, name)


def brace_expand(pattern: str) -> list[str]:
    """``*.{ts,tsx}`` → ``*.ts``, ``*.tsx`` (nested braces too), as ripgrep's globs allow."""
    start = pattern.find("{")
    if start == -1:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        if pattern[end] == "{":
            depth += 1
        elif pattern[end] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return [pattern]
    parts, depth, cur = [], 0, ""
    for c in pattern[start + 1:end]:
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (c == "{") - (c == "}")
        cur += c
    parts.append(cur)
    out: list[str] = []
    for part in parts:
        out.extend(brace_expand(pattern[:start] + part + pattern[end + 1:]))
    return out


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

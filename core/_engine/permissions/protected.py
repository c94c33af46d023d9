"""Protected paths: which patterns are in force, a fast matcher for them,
and ``Protection``, which answers whether a resolved path is protected for
a session's working directories."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..._loading.config import DEFAULT_PROTECTED, Settings, layer_cache_dir
from ..._util.folders import config_dir, policy_path
from ..._util.git_dirs import enclosing_git_dir
from ..._util.path_facts import gitignore_form
from ..._loading.layer_cache import read_plain, stamp, write_plain

__all__ = ["Protection", "ProtectedPaths", "path_matcher", "protected_patterns"]

Prefixes = tuple[tuple[str, ...], tuple[str, ...]]
"""A session's working directories, and the folders protected patterns are
relative to (those, the home folder, "/"), as prefixes ending in "/"."""


def protected_patterns(settings: Settings, from_plugins: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """The protected-path patterns: the defaults, then what plugins add
    (``pegboard_protected_paths``: the mcp plugin's ``.mcp.json``), then
    every layer's list, the system policy's last (gitignore order: later lines win, so no
    earlier ``!negation`` can undo what the policy protects).

    Layers add; none replaces, so ``protected_paths = []`` removes nothing.
    Only the user, ``--config`` and policy layers may unprotect with
    ``!pattern``; a project config (part of the repository the agent works
    in) cannot. ``dir/**`` also protects ``dir`` itself, so that deleting
    or replacing the directory is caught too.
    """
    problems: list[str] = []
    ordinary: list[str] = list(DEFAULT_PROTECTED)
    # Before the layers' lines, as a default is: the operator's ``!pattern`` may unprotect one.
    plugins_lines = list(from_plugins)
    ordinary += plugins_lines
    trusted = _DEFAULT_LINES | {p for p in plugins_lines if _plain(p)}
    from_policy: list[str] = []
    for layer in settings.layers:
        perms = layer.data.get("permissions")
        if not isinstance(perms, Mapping) or "protected_paths" not in perms:
            continue
        entries = perms["protected_paths"]
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            problems.append(f"{layer.label}: [permissions] protected_paths: expected a list of strings")
            continue
        for entry in (e.strip() for e in entries):
            if not entry:
                continue
            if "\x00" in entry:
                problems.append(f"{layer.label}: [permissions] protected_paths: {entry!r} contains a NUL byte")
                continue
            if entry.startswith("!") and layer.from_checkout:
                problems.append(f"{layer.label}: [permissions] protected_paths: {entry!r}: a project config "
                                "cannot unprotect a path; put it in the user config if you mean it")
                continue
            (from_policy if layer.name == "policy" else ordinary).append(entry)
    patterns: list[str] = []
    for entry in [*ordinary, *from_policy]:
        patterns.append(entry)
        if entry.endswith("/**") and len(entry) > 3:
            patterns.append(entry[:-3])
    # Each line parses on its own, and the defaults always do: only the
    # operator's own lines need pathspec (whose import is a cold start's
    # 31 modules) before the first write is decided.
    added = [p for p in patterns if p not in trusted]
    if added:
        import pathspec

        try:
            pathspec.GitIgnoreSpec.from_lines(added)
        except Exception as exc:
            problems.append(f"[permissions] protected_paths: a pattern does not parse: {exc}")
    return list(dict.fromkeys(patterns)), problems


def _plain(pattern: str) -> bool:
    """A pattern of names, ``/`` and ``*`` alone always parses (a bracket
    expression or an escape is what can be invalid): a plugin's ``.mcp.json``
    needs no pathspec at load."""
    return all(c.isalnum() or c in "._-/*" for c in pattern)


_DEFAULT_LINES = frozenset([*DEFAULT_PROTECTED, *(p[:-3] for p in DEFAULT_PROTECTED if p.endswith("/**"))])


class Protection:
    """The protected paths in force for a toolbox: ``is_protected`` for a
    resolved path, given a session's ``dir_prefixes`` (every write's vote
    asks). Made once by the permission engine; each session keeps it."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = tuple(patterns)
        """The ``[permissions] protected_paths`` patterns in force, in gitignore order."""
        self._matcher = path_matcher(patterns)
        # Pegboard's own config (user config dir, the policy file) is protected
        # wherever it lives; computed once, since every path vote asks.
        own = (os.path.realpath(config_dir()), os.path.realpath(policy_path()))
        self._own_prefixes = tuple(p.rstrip("/") + "/" for p in own)
        self.home = os.path.realpath(Path.home()).rstrip("/") + "/"
        """The home folder as a prefix ending in "/": patterns apply below it too."""

    def is_protected(self, path: str, prefixes: Prefixes, git_dirs: bool = True, absent: int = 0) -> bool:
        """Whether the resolved ``path`` is protected: pegboard's own config,
        a ``protected_paths`` pattern relative to a working directory, the
        home directory, or ``/`` (so ``.git`` is protected anywhere), or, with
        ``git_dirs``, a git directory under another name or anything in one
        (a bare mirror's ``hooks/``, a ``--separate-git-dir``'s ``config``);
        none is looked for in the last ``absent`` names, which the caller
        found missing. ``prefixes``: the session's ``dir_prefixes``."""
        slashed = path + "/"
        if slashed.startswith(self._own_prefixes):
            return True
        inside, bases = prefixes
        if self._matcher.matches_under(path, bases):
            return True
        if not git_dirs:
            return False
        # Up to the working directory the path lies in (a write vote's usual
        # case: a few looks), else to "/".
        stop = "/"
        for prefix in inside:
            if len(prefix) > len(stop) and slashed.startswith(prefix):
                stop = prefix
        return enclosing_git_dir(path, stop, absent=absent) is not None


def path_matcher(patterns: list[str]) -> ProtectedPaths:
    """The protected-path patterns, compiled: see ``ProtectedPaths``."""
    return ProtectedPaths(patterns)


class ProtectedPaths:
    """Gitignore-style patterns, answering as pathspec would.

    Every write's vote asks this, for three or four bases, so without
    negations it is split: a bare name (``.git``, ``.bashrc``: no slash, no
    glob) matches when any component of the path is that name, which is
    what gitignore makes of it; the other patterns become one regular
    expression of pathspec's own translations (``name/**`` is left out when
    ``name`` is a bare name: it can only match where the name does). With a
    negation the order of the lines matters, and pathspec itself decides.
    """

    __slots__ = ("names", "bodies", "regex", "spec", "_under", "_patterns", "_built", "_names_at")

    def __init__(self, patterns: list[str]) -> None:
        # Compiled when first asked (a read-only command never asks). Two
        # threads asking first both compile the same patterns; _built is
        # set last, so no one reads a half-built matcher.
        self._patterns = [gitignore_form(p) for p in patterns]
        self._built = False

    def _compile(self) -> None:
        # Into locals first, then every field at once: another thread may be
        # reading a matcher this call (its second compile) would reset.
        spec: Any = None
        kept = _kept(self._patterns)
        if kept is not None:
            names, bodies = kept
        else:
            import pathspec

            spec = pathspec.GitIgnoreSpec.from_lines(self._patterns)
            names = set()
            others: list[tuple[str, str]] = []
            for line, pattern in zip(self._patterns, spec.patterns, strict=True):
                regex = getattr(pattern, "regex", None)
                if pattern.include is None:
                    continue  # a blank or comment line
                if not pattern.include or regex is None:
                    break  # a negation: the order of the lines matters, pathspec decides
                text = line.strip()
                if _is_name(text):
                    names.add(text)
                else:
                    others.append((text, re.sub(r"\(\?P<\w+>", "(?:", regex.pattern)))
            else:
                spec = None
            if spec is not None:
                names, others = set(), []
            bodies = tuple(body for text, body in others if not (text.endswith("/**") and text[:-3] in names))
            if spec is None:
                _keep(self._patterns, names, bodies)
        self.spec = spec
        self.names = frozenset(names)
        # a bare name as a whole component of an absolute path: one search
        # rather than splitting the path (half the time, for every write's vote)
        self._names_at = re.compile("/(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?:/|\Z)") \
            if names else None
        self.bodies = bodies
        self.regex = re.compile("|".join(f"(?:{b})" for b in bodies)) if bodies else None
        self._under: dict[tuple[str, ...], re.Pattern[str] | None] = {}
        self._built = True

    def __call__(self, rel: str) -> bool:
        """Whether ``rel``, a path relative to a base, is protected."""
        if not self._built:
            self._compile()
        rel = gitignore_form(rel)
        if self.spec is not None:
            return self.spec.match_file(rel)
        if self.names and not self.names.isdisjoint(rel.split("/")):
            return True
        return self.regex is not None and self.regex.search(rel) is not None

    def matches_under(self, path: str, bases: tuple[str, ...]) -> bool:
        """Whether the absolute ``path`` is protected relative to any of
        ``bases`` it lies strictly under (prefixes ending in "/", "/" among
        them). A bare name matches any component below a base, and every
        component lies below "/": the names are checked once, on the whole
        path; the other patterns are one expression with the bases in front."""
        if not self._built:
            self._compile()
        path = path.replace("\n", "\x00")  # gitignore_form, inline: every write's vote comes here
        if self.spec is not None:
            bases = tuple(gitignore_form(b) for b in bases)
            return any(len(path) > len(b) and path.startswith(b) and self.spec.match_file(path[len(b):])
                       for b in bases)
        if self._names_at is not None and (self._names_at.search(path) is not None if path.startswith("/")
                                           else not self.names.isdisjoint(path.split("/"))):
            return True
        if self.regex is None:
            return False
        try:
            regex = self._under[bases]
        except KeyError:
            regex = self._under[bases] = self._with_bases(bases)
        if regex is None:
            return any(len(path) > len(b) and path.startswith(b) and self.regex.search(path[len(b):])
                       for b in map(gitignore_form, bases))
        return regex.match(path) is not None

    def _with_bases(self, bases: tuple[str, ...]) -> re.Pattern[str] | None:
        if len(self._under) > 64:
            self._under.clear()  # sessions with ever new working dirs
        rests = [_after_anchor(b) for b in self.bodies]
        if any(r is None for r in rests):
            return None
        front = "|".join(re.escape(gitignore_form(b)) for b in bases)
        return re.compile(f"(?:{front})(?=[\\s\\S])(?:{'|'.join(f'(?:{r})' for r in rests)})")


def _after_anchor(body: str) -> str | None:
    """``body`` without the "^" pathspec puts in front, when that "^" holds
    for all of it and is its only anchor; then, with a base put in front,
    it means "right after the base". None otherwise (a top-level ``|``
    would leave a branch unanchored, another "^" could never match after a
    base, and a protected path would pass): such a set is matched one base
    at a time."""
    if not body.startswith("^") or "(?P=" in body:
        return None  # (a back-reference would name another body's group once joined)
    rest = body[1:]
    depth = 0
    i = 0
    while i < len(rest):
        c = rest[i]
        if c == "\\":
            if rest[i + 1:i + 2] in ("", "A") or rest[i + 1:i + 2].isdigit():
                return None
            i += 2
            continue
        if c == "[":  # a class: "^" there is a negation, "|" a character
            i += 2 if rest[i + 1:i + 2] == "^" else 1
            i += 1 if rest[i:i + 1] == "]" else 0
            while i < len(rest) and rest[i] != "]":
                i += 2 if rest[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "^" or (c == "|" and depth == 0):
            return None
        i += 1
    return rest


def _pathspec_files() -> list[Any] | None:
    """Which pathspec translates the patterns: its files' stamps, found
    without importing it (None: no pathspec to be found)."""
    import importlib.util
    import os

    found = importlib.util.find_spec("pathspec")
    if found is None or not found.origin:
        return None
    folder = os.path.dirname(found.origin)
    return [[name, stamp(os.path.join(folder, *name.split("/")))]
            for name in ("__init__.py", "_meta.py", "gitignore.py", "patterns/gitwildmatch.py")]


def _slot(patterns: list[str]) -> str:
    import hashlib

    return "protected-" + hashlib.sha256("\0".join(patterns).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _kept(patterns: list[str]) -> tuple[set[str], tuple[str, ...]] | None:
    """The names and expressions an earlier process made of these patterns
    with this pathspec (``_layercache``), so that the first write decided in
    a process need not import pathspec; None when none were kept."""

    entry = read_plain(layer_cache_dir(), _slot(patterns))
    if entry is None or entry.get("patterns") != patterns or entry.get("pathspec") != _pathspec_files():
        return None
    names, bodies = entry.get("names"), entry.get("bodies")
    if not (isinstance(names, list) and isinstance(bodies, list)
            and all(isinstance(x, str) for x in (*names, *bodies))):
        return None
    return set(names), tuple(bodies)


def _keep(patterns: list[str], names: set[str], bodies: tuple[str, ...]) -> None:
    files = _pathspec_files()
    if files is not None:
        write_plain(layer_cache_dir(), _slot(patterns), {"patterns": patterns, "pathspec": files,
                                                         "names": sorted(names), "bodies": list(bodies)})


def _is_name(text: str) -> bool:
    """A bare name: no slash, no glob, no special first character."""
    return "/" not in text and not any(c in text for c in "*?[\\!#") and text not in (".", "..")

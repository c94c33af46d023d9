"""Many path rules as one lookup: the ``combine`` protocol of the permission
engine (``pegboard._engine.permissions.engine._Group``) for the fs plugin's matchers.

A ``PathRule`` matches a resolved path when the path lies under the rule's
anchor, is not the anchor itself, and its relative text matches the rule's
one gitignore pattern (or the path is a directory and ``text + "/"``
matches: ``dir/**`` covers ``dir``). Pathspec decides a single include
pattern with ``regex.search(text)``, so a set of rules with one anchor is
one regular expression: the alternation of the patterns' own regexes, each
in a group ``(?P<rN>...)`` whose name says which rule matched.

The answer is the lowest index that matches, the rule the engine would
have found first calling the matchers in turn, so a decision's reason and
source name the same rule either way. The ``is_dir`` stat is made at most
once per request, and only when a ``text + "/"`` match would be the answer.

To keep a thousand rules from being a thousand alternatives tried in turn,
the patterns are bucketed per anchor by their literal first component
(``/secret7/**`` can only match a text starting ``secret7/``): a dict
lookup picks the one bucket that can match, and only patterns without such
a component (``*.env``, ``**``) are tried for every path.

Anything that cannot be combined with certainty raises ``ValueError``, and
the engine then calls the matchers one by one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec
import pathspec.util

from pegboard.paths import gitignore_form

from ._vote import raw_path

if TYPE_CHECKING:
    from pegboard import PermissionRequest

    from ._pathrule import PathRule
    from ._vote import FsRuleMatcher

__all__ = ["CombinedFsRules", "PathRuleSet"]

try:  # the regex parser, to tell a pattern anchored at the start of the text
    import re._constants as _sre_constants  # type: ignore[import-not-found]
    import re._parser as _sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python before 3.11
    import sre_constants as _sre_constants
    import sre_parse as _sre_parse

_AT_START = (_sre_constants.AT, _sre_constants.AT_BEGINNING)
_NAMED_GROUP = re.compile(r"\(\?P<\w+>")
# What a body must not contain once its named groups are plain groups:
# back-references (by name or number) and inline flags would change meaning
# inside a larger expression.
_UNSAFE = re.compile(r"\(\?P|\(\?[aiLmsux-]|\\[1-9]|\\g")
_GLOB = frozenset("*?[\\")


def _body(pattern: Any) -> str | None:
    """The regex text of one pathspec pattern that can join an alternation,
    None for a pattern that never matches, ``ValueError`` when unsure."""
    include = getattr(pattern, "include", None)
    regex = getattr(pattern, "regex", None)
    if include is None:
        return None  # a comment or blank line: it matches nothing
    if include is not True and include is not False:
        raise ValueError(f"pattern {pattern!r}: unexpected include {include!r}")
    if not include:
        # A negation alone on its line excludes from nothing: the spec never
        # says it matches (GitIgnoreSpec answers False for it).
        return None
    if not isinstance(regex, re.Pattern) or not isinstance(regex.pattern, str):
        raise ValueError(f"pattern {pattern!r} has no text regular expression")
    text = regex.pattern
    if regex.flags != re.compile(text).flags:
        raise ValueError(f"pattern {pattern!r} is compiled with its own flags")
    body = _NAMED_GROUP.sub("(?:", text)
    if _UNSAFE.search(body):
        raise ValueError(f"pattern {pattern!r}: {body!r} cannot be combined")
    re.compile(body)  # still valid on its own
    return body


def _anchored(body: str) -> bool:
    """Whether every match of ``body`` starts at the start of the text: its
    top level begins with ``^`` (so no top-level alternation either)."""
    data = _sre_parse.parse(body).data
    return bool(data) and data[0] == _AT_START


def _key(pattern_text: str, body: str) -> str | None:
    """The first component every text this (anchored) body matches starts
    with, when the pattern names it literally; None otherwise."""
    first = pattern_text.lstrip("/").split("/", 1)[0]
    if not first or _GLOB & set(first) or first != first.strip():
        return None
    head = "^" + re.escape(first)
    # after the component: a slash, or the end of the text (the
    # ``(?:(?:/)|$)`` / ``(?:/)`` endings of a pattern naming a file or
    # a directory). ``$`` would also match before a final newline, but the
    # texts looked up are in ``gitignore_form``: they hold none.
    if body.startswith(head + "/") or body in (head + "(?:(?:/)|$)", head + "(?:/)"):
        return first
    return None


def _alternation(parts: list[tuple[int, str]]) -> str:
    # At one position the alternatives are tried in order, so of those that
    # match there, the lowest index wins.
    return "|".join(f"(?P<r{index}>{body})" for index, body in sorted(parts))


class _Anchor:
    """The rules of one anchor (a resolved directory).

    What it is made of is plain data (``save``), from which another process
    makes it again (``restored``) without asking pathspec or the regex
    parser about any rule: the alternation of each first component is
    compiled when a path first starts with it."""

    __slots__ = ("text", "prefix", "double_root", "lowest", "keyed", "sources", "anchored", "loose", "index_of")

    def __init__(self, text: str, lowest: int, sources: dict[str, str], anchored: str | None,
                 loose: list[tuple[int, str]], indices: list[int]) -> None:
        self.text = text
        self.prefix = text if text.endswith("/") else text + "/"
        # Path.relative_to compares roots: "//x" is not under "/", nor "/x" under "//"
        self.double_root = text.startswith("//")
        self.lowest = lowest
        # first component -> the alternation of the rules naming it (source; compiled on first use)
        self.sources = sources
        self.keyed: dict[str, re.Pattern[str]] = {}
        # every text an anchored body matches is matched from its start: .match
        self.anchored = re.compile(anchored) if anchored is not None else None
        self.loose = tuple((index, re.compile(body)) for index, body in sorted(loose))
        # a matched group's name -> its rule's index (a lookup rather than int() of the name)
        self.index_of = {f"r{index}": index for index in indices}

    @classmethod
    def made(cls, anchor: str, entries: list[tuple[int, str, str]]) -> _Anchor:
        """The anchor's rules ``(index, pattern text, regex body)``, sorted out."""
        keyed: dict[str, list[tuple[int, str]]] = {}
        anchored: list[tuple[int, str]] = []
        loose: list[tuple[int, str]] = []
        for index, pattern_text, body in entries:
            if _anchored(body):
                key = _key(pattern_text, body)
                if key is not None:
                    keyed.setdefault(key, []).append((index, body))
                else:
                    anchored.append((index, body))
            else:
                # searched at every position, where the earliest match (not the
                # lowest index) would win an alternation: kept apart (``**``)
                loose.append((index, body))
        return cls(anchor, min(index for index, _, _ in entries),
                   {key: _alternation(parts) for key, parts in keyed.items()},
                   _alternation(anchored) if anchored else None, loose, [index for index, _, _ in entries])

    def save(self) -> list[Any]:
        return [self.text, self.lowest, self.sources, self.anchored.pattern if self.anchored is not None else None,
                [[index, regex.pattern] for index, regex in self.loose], sorted(self.index_of.values())]

    @classmethod
    def restored(cls, saved: Any) -> _Anchor:
        text, lowest, sources, anchored, loose, indices = saved
        if not (isinstance(text, str) and type(lowest) is int and isinstance(sources, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in sources.items())
                and (anchored is None or isinstance(anchored, str)) and isinstance(indices, list)
                and all(type(i) is int for i in indices)):
            raise ValueError("not what _Anchor.save() gives")
        return cls(text, lowest, sources, anchored, [(int(i), str(body)) for i, body in loose], indices)

    def _regex(self, key: str) -> re.Pattern[str] | None:
        regex = self.keyed.get(key)
        if regex is None:
            source = self.sources.get(key)
            if source is None:
                return None
            regex = self.keyed[key] = re.compile(source)
        return regex

    def search(self, text: str) -> int | None:
        """The lowest index of a rule whose pattern matches ``text`` (in
        ``gitignore_form``: no newline in it), or None."""
        regex = self._regex(text.partition("/")[0]) if self.sources else None
        best: int | None = None
        if regex is not None:
            hit = regex.match(text)
            if hit is not None:
                best = self.index_of[hit.lastgroup]  # type: ignore[index]  # every branch is a named group
        if self.anchored is not None:
            hit = self.anchored.match(text)
            if hit is not None:
                index = self.index_of[hit.lastgroup]  # type: ignore[index]  # every branch is a named group
                if best is None or index < best:
                    best = index
        for index, regex in self.loose:
            if best is not None and index > best:
                break
            if regex.search(text) is not None:
                return index
        return best


class PathRuleSet:
    """``PathRule``s as one: ``first_match(path)`` is the lowest index of a
    rule that matches the resolved ``path`` (None when none does), exactly
    what calling each rule's ``matches`` in turn finds first.

    ``saved``: what ``save()`` gave for the same rules (their anchors and
    patterns as the caller has checked), in place of working it out."""

    __slots__ = ("anchors",)

    def __init__(self, rules: Sequence[PathRule], saved: Any = None) -> None:
        if pathspec.util.NORMALIZE_PATH_SEPS:
            raise ValueError("pathspec rewrites separators on this platform")
        if saved is not None:
            if not isinstance(saved, list):
                raise ValueError("not what PathRuleSet.save() gives")
            self.anchors = tuple(_Anchor.restored(anchor) for anchor in saved)
            return
        by_anchor: dict[str, list[tuple[int, str, str]]] = {}
        for index, rule in enumerate(rules):
            spec = rule._spec
            patterns = list(spec.patterns)
            if len(patterns) != 1 or type(spec) is not pathspec.GitIgnoreSpec:
                raise ValueError(f"{rule!r} is not one gitignore pattern")
            body = _body(patterns[0])
            if body is None:
                continue  # never matches
            pattern_text = getattr(patterns[0], "pattern", None)
            if not isinstance(pattern_text, str):
                raise ValueError(f"{rule!r} has no pattern text")
            by_anchor.setdefault(rule.anchor_text, []).append((index, pattern_text, body))
        anchors = [_Anchor.made(anchor, entries) for anchor, entries in by_anchor.items()]
        self.anchors = tuple(sorted(anchors, key=lambda a: a.lowest))

    def save(self) -> list[Any]:
        """What the set is made of, as plain data (``PathRuleSet(rules, saved=...)``)."""
        return [anchor.save() for anchor in self.anchors]

    def first_match(self, path: Path | str, known_dir: list[bool | None] | None = None) -> int | None:
        """``known_dir``: a one-item list caching whether ``path`` is a
        directory across calls for the same path (None in it: not asked yet)."""
        text = path if type(path) is str else str(path)
        double_root = text.startswith("//")
        best: int | None = None
        for anchor in self.anchors:
            if best is not None and anchor.lowest >= best:
                break  # sorted by lowest index: no later anchor can do better
            prefix = anchor.prefix
            if not text.startswith(prefix) or double_root is not anchor.double_root or len(text) == len(prefix):
                continue  # outside the anchor, or the anchor itself (".": no rule matches it)
            rel = text[len(prefix):]
            if "\n" in rel:
                rel = gitignore_form(rel)
            hit = anchor.search(rel)
            if hit is not None and (best is None or hit < best):
                best = hit
            if (best is not None and best == anchor.lowest) or (known_dir is not None and known_dir[0] is False):
                continue
            # ``dir/**`` covers ``dir``: the stat only when such a rule would
            # be the answer
            hit = anchor.search(rel + "/")
            if hit is not None and (best is None or hit < best):
                if known_dir is None:
                    known_dir = [None]
                if known_dir[0] is None:
                    known_dir[0] = os.path.isdir(text)
                if known_dir[0]:
                    best = hit
        return best


class CombinedFsRules:
    """``FsRuleMatcher``s as one (see ``FsRuleMatcher.combine``).

    ``saved``: what ``save()`` gave in an earlier process. It holds every
    rule's resolved anchor and pattern as they were then; the matchers here
    resolved theirs anew, and anything that differs (a folder replaced by a
    symlink since) is ``ValueError``, so that the group is worked out again."""

    __slots__ = ("by_tool", "narrows", "sets", "rules")

    def __init__(self, matchers: Sequence[FsRuleMatcher], saved: Any = None) -> None:
        by_covers: dict[frozenset[str], list[int]] = {}
        for index, matcher in enumerate(matchers):
            by_covers.setdefault(frozenset(matcher.covers), []).append(index)
        # every rule as it was resolved: what a saved group must have been made of
        self.rules = [[m.path_rule.anchor_text, m.path_rule.pattern, sorted(m.covers)] for m in matchers]
        kept = _kept_sets(saved, self.rules) if saved is not None else {}
        # per tool name: (rule set, its indices into matchers, the index an
        # unreadable path matches: the first rule that is not an allow rule)
        self.by_tool: dict[str, list[tuple[PathRuleSet, tuple[int, ...], int | None]]] = {}
        self.sets: list[tuple[tuple[int, ...], PathRuleSet]] = []
        # deny and ask rules also match the original of a copied path (Session.originals)
        self.narrows = all(m.rule.behavior != "allow" for m in matchers)
        for covers, indices in by_covers.items():
            rules = PathRuleSet([matchers[i].path_rule for i in indices], kept.get(tuple(indices)))
            self.sets.append((tuple(indices), rules))
            failed = next((i for i in indices if matchers[i].rule.behavior != "allow"), None)
            for name in covers:
                self.by_tool.setdefault(name, []).append((rules, tuple(indices), failed))

    def save(self) -> dict[str, Any]:
        """What the group is made of, as plain data (the engine's rule cache
        protocol; ``FsRuleMatcher.combine(matchers, saved=...)``)."""
        return {"pathspec": _PATHSPEC_VERSION, "rules": self.rules,
                "sets": [[list(indices), rules.save()] for indices, rules in self.sets]}

    def first_match(self, request: PermissionRequest) -> int | None:
        name = request.tool.name
        subsets = self.by_tool.get(name)
        if subsets is None:
            return None
        args = request.input
        raw = raw_path(name, args if type(args) is dict else dict(args))
        try:
            if raw is None:
                raise ValueError("no path")
            real = request.resolve_str(raw)
        except (ValueError, OSError):
            # an unreadable path may be anything: only an allow rule must not match it
            return min((failed for _, _, failed in subsets if failed is not None), default=None)
        # a path found missing is no directory: no second look, no stat
        known_dir: list[bool | None] = [None if request.exists(raw) else False]
        if not self.narrows and len(subsets) == 1:  # the usual case (allow rules of one tool), without the loops
            rules, indices, _failed = subsets[0]
            hit = rules.first_match(real, known_dir)
            return None if hit is None else indices[hit]
        best: int | None = None
        texts = (real, *request.session.originals(real)) if self.narrows else (real,)
        for text in texts:
            for rules, indices, _failed in subsets:
                hit = rules.first_match(text, known_dir)
                if hit is not None and (best is None or indices[hit] < best):
                    best = indices[hit]
        return best


# Another pathspec may turn a pattern into another regular expression: what it gave is kept with its version.
_PATHSPEC_VERSION = str(getattr(pathspec, "__version__", ""))


def _kept_sets(saved: Any, rules: list[list[Any]]) -> dict[tuple[int, ...], Any]:
    """The saved rule sets by their indices, when ``saved`` was made of
    exactly ``rules`` (anchors, patterns, tools) by this pathspec; else ``ValueError``."""
    if not isinstance(saved, dict) or saved.get("pathspec") != _PATHSPEC_VERSION or not _PATHSPEC_VERSION:
        raise ValueError("not what CombinedFsRules.save() gives here")
    if saved.get("rules") != rules:
        raise ValueError("the rules' folders or patterns are not the ones saved")
    sets = saved.get("sets")
    if not isinstance(sets, list) or not all(isinstance(s, list) and len(s) == 2 and isinstance(s[0], list)
                                             for s in sets):
        raise ValueError("not what CombinedFsRules.save() gives")
    return {tuple(indices): kept for indices, kept in sets}

"""Protected paths: which patterns are in force, and a fast matcher for them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pathspec

from ._config import DEFAULT_PROTECTED, Settings

__all__ = ["path_matcher", "protected_patterns"]


def protected_patterns(settings: Settings) -> tuple[list[str], list[str]]:
    """The protected-path patterns: the defaults plus every layer's list,
    the system policy's last (gitignore order: later lines win, so no
    earlier ``!negation`` can undo what the policy protects).

    Layers add; none replaces, so ``protected_paths = []`` removes nothing.
    Only the user, ``--config`` and policy layers may unprotect with
    ``!pattern``; a project config (part of the repository the agent works
    in) cannot. ``dir/**`` also protects ``dir`` itself, so that deleting
    or replacing the directory is caught too.
    """
    problems: list[str] = []
    ordinary: list[str] = list(DEFAULT_PROTECTED)
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
            if entry.startswith("!") and layer.name in ("project", "project grants"):
                problems.append(f"{layer.label}: [permissions] protected_paths: {entry!r}: a project config "
                                "cannot unprotect a path; put it in the user config if you mean it")
                continue
            (from_policy if layer.name == "policy" else ordinary).append(entry)
    patterns: list[str] = []
    for entry in [*ordinary, *from_policy]:
        patterns.append(entry)
        if entry.endswith("/**") and len(entry) > 3:
            patterns.append(entry[:-3])
    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as exc:
        problems.append(f"[permissions] protected_paths: a pattern does not parse: {exc}")
    return list(dict.fromkeys(patterns)), problems


def path_matcher(patterns: list[str]) -> Any:
    """``rel -> bool`` for gitignore-style patterns, as pathspec would answer.

    Every write's vote asks this for three or four bases, so without
    negations it is split: a bare name (``.git``, ``.bashrc``: no slash, no
    glob) matches when any component of the path is that name, which is
    what gitignore makes of it; the other patterns become one regular
    expression of pathspec's own translations. With a negation the order of
    the lines matters, and pathspec itself decides.
    """
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    names: set[str] = set()
    parts: list[str] = []
    for line, pattern in zip(patterns, spec.patterns, strict=True):
        regex = getattr(pattern, "regex", None)
        if pattern.include is None:
            continue  # a blank or comment line
        if not pattern.include or regex is None:
            return spec.match_file
        text = line.strip()
        if "/" not in text and not any(c in text for c in "*?[\\!#") and text not in (".", ".."):
            names.add(text)
        else:
            parts.append(re.sub(r"\(\?P<\w+>", "(?:", regex.pattern))
    combined = re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None

    def matches(rel: str) -> bool:
        if names and not names.isdisjoint(rel.split("/")):
            return True
        return combined is not None and combined.search(rel) is not None

    return matches

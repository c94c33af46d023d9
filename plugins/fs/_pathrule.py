"""Gitignore-style path rules: the specifier in ``Read(./.env)``, ``Edit(docs/**)``.

The public surface is deliberately tiny so other plugins (the shell plugin)
can reuse it: ``PathRule(specifier, base_dir).matches(path) -> bool``.

Forms of a specifier, as in Claude Code:

* ``//abs/path/**``  an absolute path (the doubled slash says "from /");
* ``~/x``            relative to the home directory;
* ``/x`` or ``./x``  anchored at ``base_dir`` (the project root of the rule);
* ``x``, ``*.env``   gitignore semantics under ``base_dir``: a pattern with no
  inner slash matches at any depth.

Matching is done on resolved paths, so the rule itself is resolved too: the
literal directory prefix of a pattern goes through ``realpath`` once, at
compile time. Otherwise ``//tmp/x/**`` would never match on a system where
``/tmp`` is a symlink, and a rule written through a symlinked folder would
silently stop applying.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard.paths import gitignore_form, resolve_path

if TYPE_CHECKING:
    import pathspec

__all__ = ["PathRule"]

_GLOB_CHARS = frozenset("*?[")


class PathRule:
    """One compiled path specifier. ``ValueError`` for a specifier that cannot be used."""

    __slots__ = ("specifier", "anchor_text", "pattern", "_compiled", "_anchor")

    def __init__(self, specifier: str, base_dir: Path | str | None) -> None:
        spec = specifier.strip()
        if not spec:
            raise ValueError("empty path specifier")
        if "\x00" in spec:
            raise ValueError("path specifier contains a NUL byte")
        if ".." in spec.split("/"):
            raise ValueError(f"{spec!r}: '..' is not allowed in a path rule; write the path it means")
        self.specifier = spec
        # Strings, not Paths: a config file's every rule is compiled (as a
        # Path, its anchor is made when first asked for).
        if spec.startswith("//"):
            anchor, pattern = _anchored("/", spec[2:])
        elif spec == "~" or spec.startswith("~/"):
            anchor, pattern = _anchored(os.path.expanduser("~"), spec[2:] or "**")
        else:
            if base_dir is None:
                raise ValueError(f"{spec!r} is relative but the rule has no base directory; write //abs/path")
            base = os.fspath(base_dir)
            if spec.startswith("./"):
                anchor, pattern = _anchored(base, spec[2:])
            elif spec.startswith("/"):
                anchor, pattern = _anchored(base, spec[1:])
            elif "/" in spec.rstrip("/"):
                # gitignore: an inner slash anchors the pattern at its base
                anchor, pattern = _anchored(base, spec)
            else:
                anchor, pattern = _real(base), spec
        self.anchor_text = anchor
        """The resolved folder the pattern is relative to, as text."""
        self._anchor: Path | None = None
        self.pattern = pattern
        self._compiled: pathspec.GitIgnoreSpec | None = None
        # A pattern is made a regular expression when it is first matched:
        # loading 10,000 rules must not compile 10,000 of them (the engine
        # combines a tool's rules into one expression anyway). Only a
        # bracket expression can make a pattern invalid, so that one is
        # compiled now, and a bad rule is still a config error at load.
        if "[" in pattern:
            self._spec  # noqa: B018

    @property
    def anchor(self) -> Path:
        """The resolved folder the pattern is relative to."""
        if self._anchor is None:
            self._anchor = Path(self.anchor_text)
        return self._anchor

    @property
    def _spec(self) -> pathspec.GitIgnoreSpec:
        if self._compiled is None:
            import pathspec  # here: a vote with no path rule never needs it

            try:
                self._compiled = pathspec.GitIgnoreSpec.from_lines([gitignore_form(self.pattern)])
            except Exception as exc:  # pathspec raises several types for bad patterns
                raise ValueError(f"{self.specifier!r} is not a valid path pattern: {exc}") from None
        return self._compiled

    def matches(self, path: Path) -> bool:
        """Whether ``path`` (already resolved: absolute, no symlinks) falls under the rule."""
        try:
            rel = path.relative_to(self.anchor)
        except ValueError:
            return False
        text = gitignore_form(rel.as_posix())
        if text == ".":
            return False
        if self._spec.match_file(text):
            return True
        # ``dir/**`` should cover the directory itself too, so that a Grep or
        # Glob over a folder is covered by the rule offered for that folder.
        return path.is_dir() and self._spec.match_file(text + "/")

    def fixed(self) -> Path | None:
        """The one path the rule names (``./.env``, ``secrets/**``,
        ``~/.aws/**``; it covers everything below that path too), or None
        for a rule that matches by pattern (``*.pem``; ``.env``, at any
        depth). A sandbox can hide or guard a fixed path, not a pattern."""
        if not self.pattern.startswith("/"):
            return None
        body = self.pattern[1:]
        body = body[:-3] if body.endswith("/**") else body.rstrip("/")
        if not body or _GLOB_CHARS & set(body) or "\\" in body:
            return None
        return self.anchor / body

    def __repr__(self) -> str:
        return f"PathRule({self.specifier!r}, anchor={self.anchor_text!r})"


def _real(text: str) -> str:
    """``os.path.realpath``, through the C library's realpath(3) (a tenth of
    the time; every path rule resolves its anchor once, at load)."""
    if not os.path.isabs(text):
        return os.path.realpath(text)
    return os.fspath(resolve_path(text, _ROOT))


_ROOT = Path("/")


def _anchored(base: str, pattern: str) -> tuple[str, str]:
    """Split an anchored pattern into a resolved anchor and the rest.

    The anchor is the resolved literal prefix minus its last component, which
    stays in the pattern so that ``//dir/**`` can still match ``/dir`` itself.
    """
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if not parts:
        return _real(base), "**"
    first_glob = next((i for i, p in enumerate(parts) if _GLOB_CHARS & set(p)), len(parts))
    literal = parts[:first_glob]
    if not literal:
        return _real(base), "/" + "/".join(parts)
    # the real path's folder and name, as Path's parent and name read them
    parent, name = os.path.split(_real(os.path.join(base, *literal)))
    rest = [name, *parts[first_glob:]] if name else parts[first_glob:]
    suffix = "/" if pattern.endswith("/") and not parts[first_glob:] else ""
    return parent, "/" + "/".join(rest) + suffix

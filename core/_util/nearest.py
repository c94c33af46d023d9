"""What a mistyped name was most likely meant to be: the one place the core
suggests a name ("did you mean 'NotebookEdit'?") for tools, plugins, config
tables and keys, so that every message agrees on what counts as near."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["did_you_mean", "nearest"]

# difflib's ratio at and above which a name counts as a likely typo of another
# ("Reed" of "Read" is 0.75, "permisions" of "permissions" 0.95; "Bash" of
# "Glob" is 0.25).
CUTOFF = 0.6


def nearest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` most likely means: one that differs only in case,
    else the closest by difflib's ratio (case ignored) at ``CUTOFF`` or
    above, else None. ``word`` itself, when among the choices, is no
    suggestion."""
    names = sorted({c for c in choices if isinstance(c, str) and c != word})
    if not names or not word:
        return None
    folded = word.casefold()
    for name in names:
        if name.casefold() == folded:
            return name
    import difflib  # only for a name that is not there

    by_folded: dict[str, str] = {}
    for name in names:
        by_folded.setdefault(name.casefold(), name)
    close = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=CUTOFF)
    return by_folded[close[0]] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'X'?"`` for ``nearest``'s answer, or ``""``."""
    found = nearest(word, choices)
    return f"did you mean {found!r}?" if found is not None else ""

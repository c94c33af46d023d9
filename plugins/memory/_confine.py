"""Memory paths: the model's ``/memories/...`` to a key in the store, or a refusal.

Memories live in the store, not on disk, so no path can reach a file; the
rules are still those of a directory the model cannot leave, so that what it
writes means what it reads: every path is ``/memories`` or below it, with no
``.`` or ``..`` part, no empty part, no backslash, NUL or other control
character, and no percent-encoding (nothing is decoded, so ``%2e%2e`` would be
a name that only looks like a way out). A key is the part below
``/memories`` (``notes/style.md``; ``""`` for ``/memories`` itself), in NFC.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["MAX_DEPTH", "MAX_NAME_CHARS", "MAX_PATH_BYTES", "ROOT", "PathRefused", "memory_key", "shown"]

ROOT = "/memories"
MAX_PATH_BYTES = 1024
MAX_NAME_CHARS = 255
MAX_DEPTH = 16
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_RULE = (f"Memory paths are {ROOT} or {ROOT}/<name>/..., without `.` or `..` parts, backslashes, "
         "percent-encoding or control characters.")


class PathRefused(ValueError):
    """A path the memory tool does not take; the message is for the model."""


def _refuse(path: str, why: str) -> PathRefused:
    return PathRefused(f"The path {path!r} is refused: {why}. {_RULE}")


def memory_key(path: object) -> str:
    """The store key of a model's memory path; ``PathRefused`` saying why not."""
    if not isinstance(path, str) or not path:
        raise PathRefused(f"A memory path is needed (such as {ROOT}/notes.md). {_RULE}")
    if "\x00" in path:
        raise _refuse(path, "it holds a NUL character")
    if "\\" in path:
        raise _refuse(path, "it holds a backslash")
    if _PERCENT.search(path):
        raise _refuse(path, "it holds percent-encoding, which is not decoded")
    if any(unicodedata.category(ch)[0] == "C" for ch in path):
        raise _refuse(path, "it holds a control character")
    text = unicodedata.normalize("NFC", path)
    if text != ROOT and not text.startswith(ROOT + "/"):
        where = "it is outside " + ROOT if text.startswith("/") else "it is not absolute"
        raise _refuse(path, f"{where}; every memory path starts with {ROOT}")
    rest = text[len(ROOT) + 1:]
    if rest.endswith("/"):
        rest = rest[:-1]  # a folder may be written with its trailing slash
    parts = rest.split("/") if rest else []
    for part in parts:
        if not part:
            raise _refuse(path, "it has an empty part (`//`)")
        if unicodedata.normalize("NFKC", part) in (".", ".."):
            raise _refuse(path, f"its part {part!r} would step out of where it is")
        if len(part) > MAX_NAME_CHARS:
            raise _refuse(path, f"a name is longer than {MAX_NAME_CHARS} characters")
    if len(parts) > MAX_DEPTH:
        raise _refuse(path, f"it is more than {MAX_DEPTH} folders deep")
    if len(text.encode("utf-8")) > MAX_PATH_BYTES:
        raise _refuse(path, f"it is longer than {MAX_PATH_BYTES} bytes")
    return "/".join(parts)


def shown(key: str) -> str:
    """The path the model knows for ``key``."""
    return f"{ROOT}/{key}" if key else ROOT

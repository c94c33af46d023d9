"""The six commands, on one set of memories in one transaction each.

Results and refusals are worded as Anthropic's memory tool words them (its
reference implementation in the anthropic SDK), so that a model trained on
that tool reads them as it expects: ``File created successfully at: ...``,
``The path ... does not exist. Please provide a valid path.``, ``No
replacement was performed, ...``. A refusal changes nothing: it is raised
inside the transaction, which is then rolled back.
"""

from __future__ import annotations

from typing import Any

from ._confine import ROOT, shown
from ._files import Entry, Limits, Space, delete_keys, entries, lock, move_keys, read_file, write_file

__all__ = ["Refused", "create", "delete", "insert", "listing", "rename", "str_replace", "view"]

LINE_NUMBER_WIDTH = 6  # as the reference implementation: room for 999,999 lines
CONTEXT_LINES = 2      # lines shown each side of a replacement


class Refused(Exception):
    """The command cannot be done as asked; the message is for the model."""


def _missing(path: str) -> Refused:
    return Refused(f"The path {path} does not exist. Please provide a valid path.")


def _folders(known: dict[str, Entry]) -> set[str]:
    """Every folder the files make (their parents), ``""`` included."""
    found = {""}
    for key in known:
        parts = key.split("/")
        found.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return found


def _below(known: dict[str, Entry], key: str) -> list[str]:
    """The files in folder ``key`` at any depth."""
    if not key:
        return sorted(known)
    prefix = key + "/"
    return sorted(k for k in known if k.startswith(prefix))


def _size(count: int) -> str:
    """A size as the reference listing shows one: 0B, 512B, 1.5K, 4K, 2.1M."""
    if count < 1024:
        return f"{count}B"
    value = float(count)
    for unit in ("K", "M", "G"):
        value /= 1024
        if value < 1024 or unit == "G":
            return f"{int(value)}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    raise AssertionError("unreachable")


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{str(first + i).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def _lines(content: str) -> list[str]:
    """The file's lines, split at LF only, without the empty tail a final newline leaves."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _hidden(key: str) -> bool:
    return any(part.startswith(".") for part in key.split("/"))


# --- view ------------------------------------------------------------------------


def listing(known: dict[str, Entry], key: str) -> str:
    """Folder ``key`` two levels deep, as the reference implementation lists
    one; ``Refused`` when there is no such folder."""
    path = shown(key)
    folders = _folders(known)
    if key not in folders:
        raise _missing(path)
    below = _below(known, key)
    base = len(key.split("/")) if key else 0
    sizes: dict[str, int] = {}
    for file in below:
        parts = file.split("/")
        for depth in range(base + 1, len(parts) + 1):
            item = "/".join(parts[:depth])
            sizes[item] = sizes.get(item, 0) + known[file].size
    items = sorted((item for item in sizes if len(item.split("/")) - base <= 2 and not _hidden(item[len(key):])),
                   key=lambda item: item.split("/"))  # a folder's files right after it: a/x before a-b
    lines = [f"{_size(sum(known[f].size for f in below))}\t{path}"]
    for item in items:
        lines.append(f"{_size(sizes[item])}\t{shown(item)}{'/' if item in folders else ''}")
    return (f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:\n"
            + "\n".join(lines))


def view(conn: Any, space: Space, key: str, view_range: list[int] | None) -> str:
    path = shown(key)
    content = read_file(conn, space, key) if key else None
    if content is None:
        folder = listing(entries(conn, space), key)
        if view_range is not None:
            raise Refused("The `view_range` parameter is not allowed when `path` points to a directory.")
        return folder
    lines = _lines(content)
    first = 1
    if view_range is not None:
        start, end = view_range
        count = len(lines)
        if not 1 <= start <= max(count, 1):
            raise Refused(f"Invalid `view_range` parameter: {view_range}. Its first element `{start}` should be "
                          f"within the range of lines of the file: [1, {count}].")
        if end != -1 and end < start:
            raise Refused(f"Invalid `view_range` parameter: {view_range}. Its second element `{end}` should be "
                          f"larger or equal than its first `{start}`, or -1 for the end of the file.")
        lines = lines[start - 1:] if end == -1 else lines[start - 1:end]
        first = start
    body = _numbered(lines, first) if lines else "(the file is empty)"
    return f"Here's the content of {path} with line numbers:\n{body}"


# --- changes -----------------------------------------------------------------------


def _file_place(known: dict[str, Entry], key: str) -> None:
    """Refuse a new file at ``key`` where a folder is, or below a file."""
    if key in _folders(known):
        raise Refused(f"The path {shown(key)} is a directory. Give a file's path, such as {shown(key)}/notes.md."
                      if key else f"{ROOT} is the memory directory itself: give a file's path below it, such as "
                      f"{ROOT}/notes.md.")
    parts = key.split("/")
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        if parent in known:
            raise Refused(f"The path {shown(parent)} is a file, so nothing can be made below it.")


def create(conn: Any, space: Space, key: str, text: str, limits: Limits, by: str | None) -> str:
    lock(conn, space)
    known = entries(conn, space)
    if key in known:
        raise Refused(f"File {shown(key)} already exists. Change it with str_replace or insert, or delete it "
                      "first to write it anew.")
    _file_place(known, key)
    write_file(conn, space, key, text, known=known, limits=limits, by=by)
    return f"File created successfully at: {shown(key)}"


def _existing_file(conn: Any, space: Space, key: str) -> tuple[dict[str, Entry], str]:
    lock(conn, space)
    known = entries(conn, space)
    if key not in known:
        if key in _folders(known):
            raise Refused(f"The path {shown(key)} is not a file.")
        raise _missing(shown(key))
    content = read_file(conn, space, key)
    assert content is not None  # the row is there and the set is locked
    return known, content


def str_replace(conn: Any, space: Space, key: str, old: str, new: str, limits: Limits, by: str | None) -> str:
    path = shown(key)
    if not old:
        raise Refused("No replacement was performed: `old_str` is empty. Give the exact text to replace, "
                      "as it appears once in the file.")
    known, content = _existing_file(conn, space, key)
    count = content.count(old)
    if count == 0:
        raise Refused(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
    if count > 1:
        lines, start = [], 0
        while (pos := content.find(old, start)) != -1:
            lines.append(content.count("\n", 0, pos) + 1)
            start = pos + 1
        raise Refused(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                      f"{', '.join(map(str, lines))}. Please ensure it is unique")
    at = content.find(old)
    changed = content.count("\n", 0, at)
    updated = content.replace(old, new, 1)
    write_file(conn, space, key, updated, known=known, limits=limits, by=by)
    all_lines = _lines(updated)
    first = max(0, changed - CONTEXT_LINES)
    snippet = all_lines[first:min(len(all_lines), changed + CONTEXT_LINES + 1)]
    return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + _numbered(snippet, first + 1))


def insert(conn: Any, space: Space, key: str, line: int, text: str, limits: Limits, by: str | None) -> str:
    known, content = _existing_file(conn, space, key)
    lines = _lines(content)
    if not 0 <= line <= len(lines):
        raise Refused(f"Invalid `insert_line` parameter: {line}. It should be within the range [0, {len(lines)}].")
    lines.insert(line, text.rstrip("\n"))
    write_file(conn, space, key, "\n".join(lines) + "\n", known=known, limits=limits, by=by)
    return f"The file {shown(key)} has been edited."


def delete(conn: Any, space: Space, key: str) -> str:
    if not key:
        raise Refused(f"Cannot delete the {ROOT} directory itself")
    lock(conn, space)
    known = entries(conn, space)
    doomed = [key] if key in known else _below(known, key)
    if not doomed:
        raise Refused(f"The path {shown(key)} does not exist")
    delete_keys(conn, space, doomed)
    return f"Successfully deleted {shown(key)}"


def rename(conn: Any, space: Space, old: str, new: str, by: str | None) -> str:
    if not old:
        raise Refused(f"Cannot rename the {ROOT} directory itself")
    if not new:
        raise Refused(f"The destination {ROOT} already exists")
    lock(conn, space)
    known = entries(conn, space)
    folders = _folders(known)
    if old in known:
        moves = [(old, new)]
    elif old in folders:
        if new == old or new.startswith(old + "/"):
            raise Refused(f"Cannot move {shown(old)} into itself ({shown(new)}).")
        moves = [(file, new + file[len(old):]) for file in _below(known, old)]
    else:
        raise Refused(f"The path {shown(old)} does not exist")
    if new in known or new in folders:
        raise Refused(f"The destination {shown(new)} already exists")
    rest = {k: e for k, e in known.items() if k not in dict(moves)}
    _file_place(rest, new)
    move_keys(conn, space, moves, by)
    return f"Successfully renamed {shown(old)} to {shown(new)}"

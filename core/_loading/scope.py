"""What a project's own files may set.

A checkout's ``.pegboard/config.toml`` comes with the repository, not from
the person. Until the person trusts the folder it may only narrow what
pegboard may do (``untrusted_part``); trusted or not, it never sets an
option marked ``UserScope`` (``user_scope_paths``). What is left out is
kept as ``Ignored`` entries, so that nothing is dropped silently.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from .._api.policy import narrower_or_equal, policy_for


__all__ = ["Ignored", "UserScope", "ignored_note", "untrusted_part", "user_scope_paths"]


@dataclass(frozen=True, slots=True)
class UserScope:
    """Marks a config option that only the person's own config (the user
    file, ``--config``, the system policy) may set, never a project's, even a
    trusted one: the program a tool runs, the sandbox switched off, the
    network given to it. Put it in the field's annotation::

        rg_path: Annotated[str | None, UserScope("it chooses the program Grep runs")] = None

    A project layer that sets the option gets a config message naming the
    file and key, and the value comes from the other layers. On a field
    whose type is a model, it covers the whole table.
    """

    why: str = ""
    """Why a project may not set it, shown in the message to whoever tried
    (``"it chooses the program Grep runs"``)."""


IgnoredKind = Literal["untrusted", "user scope", "outside"]


@dataclass(frozen=True, slots=True)
class Ignored:
    """Something a project's files set or hold that pegboard did not apply.

    ``kind``: "untrusted" (the folder is not trusted; trusting it applies
    this), "user scope" (only the person's own config may set it), "outside"
    (a project file that resolves outside the project root).
    """

    source: str
    what: str
    kind: IgnoredKind
    detail: str = ""

    def describe(self, quote: Callable[[str], str] = str, say: Callable[[str], str] = str) -> str:
        """One line: the source, what, why. ``quote`` and ``say`` render the
        source and the project's words (``ignored_note`` quotes them)."""
        why = {"untrusted": "the folder is not trusted",
               "user scope": "only your own config (user file, --config, system policy) may set it",
               "outside": "it resolves outside the project folder"}[self.kind]
        extra = f"; {say(self.detail)}" if self.detail else ""
        return f"{quote(self.source)}: {say(self.what)}: ignored ({why}{extra})"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "what": self.what, "kind": self.kind, "detail": self.detail}


NOTE_ITEMS = 8
# What the note leaves unquoted: pegboard's own key spellings ("[permissions] allow[2]",
# "MCP servers a, b"), which cannot hold a bracket's end or a line break.
_PLAIN = re.compile(r"(\[[A-Za-z0-9_.-]+\] )?[A-Za-z0-9 _.,:*/=+-]*(\[[0-9]+\])?")


def quote_for_model(text: str) -> str:
    """``text`` as a JSON string in which no character can end the note's
    ``[pegboard: ...]`` bracket or start a line of its own: line breaks
    (every Unicode one: the escape is ASCII-only) and brackets are written as
    ``\\n``, ``\\u005d`` and so on. The project's file and folder names are
    the checkout's words, never pegboard's."""
    return json.dumps(text, ensure_ascii=True).replace("[", "\\u005b").replace("]", "\\u005d")


def _said(text: str) -> str:
    return text if _PLAIN.fullmatch(text) else quote_for_model(text)


def ignored_note(settings: Any) -> str:
    """What the model is told once per session when the project's files were
    not all applied: what was left out, and that only the person can change
    it. Every path and every word taken from the project's files is quoted
    (``quote_for_model``), so that no file or folder name speaks as pegboard."""
    root = quote_for_model(str(settings.root))
    untrusted = [i for i in settings.ignored if i.kind == "untrusted"]
    others = [i for i in settings.ignored if i.kind != "untrusted"]
    parts = []
    if untrusted:
        listed = "; ".join(f"{_said(i.what)} ({quote_for_model(i.source)})" for i in untrusted[:NOTE_ITEMS])
        more = f"; and {len(untrusted) - NOTE_ITEMS} more" if len(untrusted) > NOTE_ITEMS else ""
        parts.append(f"[pegboard: the folder {root} is not trusted, so its own files may only narrow what runs "
                     f"here. Not applied: {listed}{more}. Calls those settings would allow are asked or "
                     f"refused. Only the person can trust the folder (`pegboard trust {root}`), for sessions "
                     "started after that; do not try to work around it.]")
    if others:
        listed = "; ".join(i.describe(quote_for_model, _said) for i in others[:NOTE_ITEMS])
        more = f"; and {len(others) - NOTE_ITEMS} more" if len(others) > NOTE_ITEMS else ""
        parts.append(f"[pegboard: also not applied from this project's files: {listed}{more}. "
                     "`pegboard doctor` lists them for the person.]")
    return "\n".join(parts)


# --- user scope ---------------------------------------------------------------


@functools.cache
def user_scope_paths(model: type[BaseModel]) -> dict[tuple[str, ...], UserScope]:
    """The options of ``model`` (and of its nested models) marked ``UserScope``,
    as key paths relative to the model's table."""
    found: dict[tuple[str, ...], UserScope] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        marker = next((m for m in info.metadata if isinstance(m, UserScope)), None)
        if marker is not None:
            found[(key,)] = marker
            continue
        for nested in _models_in(info.annotation):
            for path, inner in user_scope_paths(nested).items():
                found.setdefault((key, *path), inner)
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The model classes a field holds directly (``Model``, ``Model | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def pop_path(data: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    """Remove ``path`` from nested tables; (whether it was there, its value)."""
    node: Any = data
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return False, None
    if not isinstance(node, dict) or path[-1] not in node:
        return False, None
    return True, node.pop(path[-1])


def leaf_paths(path: tuple[str, ...], popped: tuple[bool, Any]) -> list[tuple[str, ...]]:
    """What ``pop_path`` took out, as the keys to report: ``path`` itself, or
    for a whole table the keys it held (``[store] url``, not ``store``)."""
    found, value = popped
    if not found:
        return []
    if isinstance(value, Mapping) and value:
        return [(*path, str(key)) for key in value]
    return [path]


def deep_copy(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: deep_copy(v) if isinstance(v, Mapping) else v for k, v in data.items()}


# --- an untrusted project ------------------------------------------------------

# Keys of [permissions] and [tools] an untrusted project keeps as they are:
# each can only add a denial, a question or a protection.
_NARROWING = {("permissions", "deny"), ("permissions", "ask"), ("permissions", "protected_paths"),
              ("tools", "permission")}


def untrusted_part(data: Mapping[str, Any], below: Mapping[str, Any]) -> tuple[dict[str, Any],
                                                                               list[tuple[tuple[str, ...], Any]]]:
    """What an untrusted project layer may set, given ``below`` (the layers
    under it, merged): deny and ask rules, protected paths, raising a tool's
    level, blocking tools (added to the others' block list), narrowing the
    others' ``[tools] allow``, switching plugins off, switching bypass modes
    off, and a default mode no wider than the one below. Everything else is
    returned as (key path, value) to report: allow rules, wider modes,
    additional directories, every plugin option, any other table.
    """
    kept: dict[str, Any] = {}
    dropped: list[tuple[tuple[str, ...], Any]] = []
    for table, body in data.items():
        if table not in ("permissions", "tools", "plugins") or not isinstance(body, Mapping):
            dropped.append(((table,), body))
            continue
        for key, value in body.items():
            path = (table, key)
            keep, value = _narrowed(path, value, below)
            if table == "plugins" and isinstance(value, Mapping):
                enabled = value.get("enabled")
                dropped += [((table, key, k), v) for k, v in value.items() if k != "enabled" or v is not False]
                if enabled is False:
                    kept.setdefault(table, {})[key] = {"enabled": False}
                continue
            if keep:
                kept.setdefault(table, {})[key] = value
            else:
                dropped.append((path, value))
    return kept, dropped


def _narrowed(path: tuple[str, ...], value: Any, below: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether an untrusted project keeps ``path = value``, and the value it keeps."""
    if path in _NARROWING:
        return True, value
    under = below.get(path[0], {})
    under = under if isinstance(under, Mapping) else {}
    if path == ("tools", "block") and isinstance(value, list):
        others = under.get("block", [])
        return True, list(dict.fromkeys([*(others if isinstance(others, list) else []), *value]))
    if path == ("tools", "allow") and isinstance(value, list):
        others = under.get("allow")
        return True, [t for t in value if t in others] if isinstance(others, list) else value
    if path == ("permissions", "disable_bypass_permissions"):
        return value is True, value
    if path == ("permissions", "mode") and isinstance(value, str):
        current = under.get("mode", "default")
        try:
            return narrower_or_equal(policy_for(value), policy_for(current if isinstance(current, str)
                                                                   else "default")), value
        except ValueError:
            return False, value
    return path[0] == "plugins", value

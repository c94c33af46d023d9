"""Check a dict against an official SDK's TypedDict params (anthropic, openai).

pydantic's ``TypeAdapter`` validates them, but it ignores keys a TypedDict
does not declare and validates ``Iterable`` fields only when consumed, so a
misspelt key or a wrong block inside a content list would pass. ``conforms``
walks the annotations itself: every required key present, no undeclared key,
every value of its declared type, all the way down; then ``TypeAdapter``
validates as well.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import pydantic
import typing_extensions

_TYPEDDICT_META = (type(typing.TypedDict("_T", {})), type(typing_extensions.TypedDict("_U", {})))


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, _TYPEDDICT_META)


def problems(tp: Any, value: Any, where: str = "$") -> list[str]:
    origin = typing_extensions.get_origin(tp)
    args = typing_extensions.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin in (typing_extensions.Required, typing_extensions.NotRequired, typing.Required, typing.NotRequired):
        return problems(args[0], value, where)
    if origin is typing_extensions.Annotated or origin is typing.Annotated:
        return problems(args[0], value, where)
    if origin is typing.Literal or origin is typing_extensions.Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    if origin in (typing.Union, types.UnionType):
        found = [problems(a, value, where) for a in args]
        if any(not p for p in found):
            return []
        return [f"{where}: matches no member of the union; closest: {min(found, key=len)}"]
    if tp is type(None):
        return [] if value is None else [f"{where}: expected null"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{where}: expected a string, got {type(value).__name__}"]
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{where}: expected a boolean"]
    if tp in (int, float):
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{where}: expected a number"]
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{where}: expected an object ({tp.__name__})"]
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        out = [f"{where}: {tp.__name__} has no key {key!r}" for key in value if key not in hints]
        out += [f"{where}: {tp.__name__} needs {key!r}" for key in tp.__required_keys__ if key not in value]
        for key, item in value.items():
            if key in hints:
                out += problems(hints[key], item, f"{where}.{key}")
        return out
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        return [] if isinstance(value, dict) else [f"{where}: expected an object"]
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence) or (
            getattr(origin, "__name__", "") == "SequenceNotStr"):
        if not isinstance(value, list):
            return [f"{where}: expected a list"]
        inner = args[0] if args else Any
        return [p for i, item in enumerate(value) for p in problems(inner, item, f"{where}[{i}]")]
    if isinstance(tp, type):
        return [] if isinstance(value, tp) else [f"{where}: expected {tp.__name__}"]
    return []  # a type this checker does not know: TypeAdapter still validates it


def conforms(tp: Any, value: Any) -> None:
    """Raise AssertionError naming what does not fit."""
    found = problems(tp, value)
    assert not found, "\n".join(found)
    validated = pydantic.TypeAdapter(tp).validate_python(value)
    assert validated is not None

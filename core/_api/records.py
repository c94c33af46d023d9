"""Dataclasses whose methods are not compiled at import.

``@dataclass`` writes the source of each method it adds (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` and
``__delattr__``) and ``exec``s it: parsing and compiling that text is 2.3-4.1M
instructions a class, the largest cost pegboard's own modules had at
start-up (a permissions check defined some thirty of them). ``record`` makes
the same dataclass without compiling anything: the class writes its own
``__init__`` (compiled once into its module's ``.pyc``, and as fast as the
generated one), and the other methods are shared functions over the fields.

A record is a dataclass in every way callers can see (``fields``,
``replace``, ``asdict``, ``is_dataclass``, ``__match_args__``,
``__dataclass_params__``, equality, hashing, frozenness, ``repr``), and
tests/test_records.py holds each one to the class ``@dataclass`` with the
same arguments would make, including its ``__init__``'s signature.
"""

from __future__ import annotations

import dataclasses
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

__all__ = ["FACTORY", "RECORDS", "record"]

_T = TypeVar("_T", bound=type)


class _Factory:
    """The default a written ``__init__`` gives a ``default_factory`` field
    (``@dataclass`` shows its own marker the same way)."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _Factory()
"""``def __init__(self, items: list[str] = FACTORY)``: the field's ``default_factory`` makes the value."""

RECORDS: list[type] = []
"""Every class made by ``record``, for the test that compares each with ``@dataclass``'s."""


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields as a tuple, as ``@dataclass``'s methods compare and hash them."""
    if len(names) == 1:
        (name,) = names
        return lambda obj: (getattr(obj, name),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)  # two or more names give a tuple


def _add_repr(cls: type, names: tuple[str, ...]) -> None:
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in running:  # a record holding itself, as @dataclass's repr answers it
            return "..."
        running.add(key)
        try:
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({inner})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    cls.__repr__ = __repr__  # type: ignore[assignment]


def _add_eq(cls: type, names: tuple[str, ...]) -> None:
    get = _getter(names)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(get(self) == get(other))
        return NotImplemented

    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    cls.__eq__ = __eq__  # type: ignore[assignment]


def _add_hash(cls: type, names: tuple[str, ...]) -> None:
    get = _getter(names)

    def __hash__(self: Any) -> int:
        return hash(get(self))

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    cls.__hash__ = __hash__  # type: ignore[assignment]


def _add_frozen(cls: type, names: tuple[str, ...]) -> None:
    owner: Any = cls
    for name in ("__setattr__", "__delattr__"):
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is owner or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    cls.__setattr__ = __setattr__  # type: ignore[assignment]
    cls.__delattr__ = __delattr__  # type: ignore[assignment]


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(*, init: bool = True, repr: bool = True, eq: bool = True, frozen: bool = False,
           kw_only: bool = False, slots: bool = False) -> Callable[[_T], _T]:
    """``@dataclass(...)`` with the same arguments, for a class that writes
    its own ``__init__`` (when ``init``): plain assignments of its
    parameters, named and ordered as the fields, a frozen class's through
    ``object.__setattr__``, ``FACTORY`` for a ``default_factory`` field's
    default, then ``__post_init__`` if the class has one."""

    def make(cls: _T) -> _T:
        if init and "__init__" not in cls.__dict__:
            raise TypeError(f"{cls.__qualname__}: a record writes its own __init__")
        made: Any = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False, kw_only=kw_only,
                                          slots=slots)
        fields = dataclasses.fields(made)
        if repr and "__repr__" not in made.__dict__:
            _add_repr(made, tuple(f.name for f in fields if f.repr))
        if eq and "__eq__" not in made.__dict__:
            _add_eq(made, tuple(f.name for f in fields if f.compare))
        # @dataclass's rule for __hash__ (unsafe_hash=False): an eq class that
        # is not frozen is unhashable; a frozen one hashes its fields; a
        # __hash__ the class wrote stays.
        explicit_hash = "__hash__" in cls.__dict__ and not (cls.__dict__["__hash__"] is None
                                                            and "__eq__" in cls.__dict__)
        if eq and not explicit_hash:
            if frozen:
                _add_hash(made, tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))
            else:
                made.__hash__ = None
        if frozen:
            _add_frozen(made, tuple(f.name for f in fields))
        params = made.__dataclass_params__
        params.init, params.repr, params.eq, params.frozen = init, repr, eq, frozen
        RECORDS.append(made)
        return made

    return make

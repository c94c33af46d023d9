"""Each ``record`` (a dataclass whose ``__init__`` is written out, see
pegboard._api.records) against the class ``@dataclass`` would make from the same
fields: the same signature, fields, parameters, repr, equality, hash and
frozenness. A written ``__init__`` that forgets, renames or reorders a
field, or a shared method that drifts from the generated one, fails here."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

from pegboard._api.records import FACTORY, RECORDS, record

# The modules that define records: importing them fills RECORDS.
MODULES = ("pegboard._cli.shared", "pegboard._api.clients", "pegboard._loading.config", "pegboard._api.decisions", "pegboard._loading.hooks",
           "pegboard._loading.local_plugins", "pegboard._api.plugin_context", "pegboard._loading.plugins", "pegboard._api.policy", "pegboard._loading.scope", "pegboard._engine.session",
           "pegboard._engine.toolbox", "pegboard._api.tools", "pegboard._loading.trust")
for _name in MODULES:
    importlib.import_module(_name)

# Records whose __init__ takes other things than the fields and converts them
# (as a class may with @dataclass, which keeps an __init__ the class wrote).
OWN_INIT = {"RuleSamples", "PermissionRequest", "Client", "Grant"}


def _twin(cls: type) -> Any:
    """The class @dataclass makes from ``cls``'s fields and arguments."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    specs = []
    for f in dataclasses.fields(cls):
        specs.append((f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                         init=f.init, repr=f.repr, hash=f.hash,
                                                         compare=f.compare, kw_only=f.kw_only)))
    twin = dataclasses.make_dataclass(cls.__name__, specs, init=params.init, repr=params.repr, eq=params.eq,
                                      frozen=params.frozen, namespace={"__qualname__": cls.__qualname__})
    twin.__qualname__ = cls.__qualname__
    return twin


def _written_init_only(cls: type) -> bool:
    """Whether ``__init__`` only assigns its parameters (no __post_init__, no field left to it)."""
    return (cls.__name__ not in OWN_INIT and not hasattr(cls, "__post_init__")
            and all(f.init for f in dataclasses.fields(cls)))


def _instance(cls: Any) -> Any:
    """An instance whose every field holds its own object (or a default-made one)."""
    values = {f.name: object() for f in dataclasses.fields(cls)}
    if cls.__dataclass_params__.init and _written_init_only(cls):
        made = cls(**values)
        assert {name: getattr(made, name) for name in values} == values, "__init__ must assign each field"
        return made
    made = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(made, name, value)
    return made


def _copy_into(cls: Any, source: Any) -> Any:
    made = object.__new__(cls)
    for f in dataclasses.fields(cls):
        object.__setattr__(made, f.name, getattr(source, f.name))
    return made


def test_every_module_with_records_is_listed_here() -> None:
    assert RECORDS, "no records were made"
    assert {cls.__module__ for cls in RECORDS if cls.__module__.startswith("pegboard")} <= set(MODULES)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_a_record_is_the_dataclass_it_describes(cls: Any) -> None:
    twin = _twin(cls)
    assert dataclasses.is_dataclass(cls)
    assert [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)
            for f in dataclasses.fields(cls)] == \
        [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)
         for f in dataclasses.fields(twin)]
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)
    assert cls.__match_args__ == twin.__match_args__
    if cls.__dataclass_params__.init and cls.__name__ not in OWN_INIT:
        # (the written __init__'s "-> None" is a string, as its module's annotations are)
        assert str(inspect.signature(cls).replace(return_annotation=None)) == \
            str(inspect.signature(twin).replace(return_annotation=None))
        for name, param in inspect.signature(cls).parameters.items():
            field = next(f for f in dataclasses.fields(cls) if f.name == name)
            if field.default_factory is not dataclasses.MISSING:
                assert param.default is FACTORY
    one = _instance(cls)
    twin_one = _copy_into(twin, one)
    if cls.__repr__.__module__ == "pegboard._api.records":
        assert repr(one) == repr(twin_one)
    same, other = _copy_into(cls, one), _instance(cls)
    assert (one == same) == (twin_one == _copy_into(twin, one))
    assert (one == other) == (twin_one == _copy_into(twin, other))
    assert one.__eq__(twin_one) is NotImplemented or not cls.__dataclass_params__.eq
    assert (cls.__hash__ is None) == (twin.__hash__ is None)
    if twin.__hash__ is not None and cls.__dataclass_params__.eq:
        assert hash(one) == hash(twin_one)
    if cls.__dataclass_params__.frozen:
        name = dataclasses.fields(cls)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field"):
            setattr(one, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field"):
            delattr(one, name)
    if cls.__dataclass_params__.init and _written_init_only(cls):
        changed = dataclasses.replace(one, **{dataclasses.fields(cls)[0].name: "changed"})
        assert getattr(changed, dataclasses.fields(cls)[0].name) == "changed"


def test_the_shared_methods_answer_as_generated_ones() -> None:
    @record(frozen=True)
    class Pair:
        left: Any
        right: Any = None

        def __init__(self, left: Any, right: Any = None) -> None:
            object.__setattr__(self, "left", left)
            object.__setattr__(self, "right", right)

    @dataclasses.dataclass(frozen=True)
    class Made:
        left: Any
        right: Any = None

    nan = float("nan")
    for args in [(1, 2), (nan, nan), ([1], None)]:
        a, b = Pair(*args), Pair(*args)
        c, d = Made(*args), Made(*args)
        assert (a == b) == (c == d)
        assert repr(a).replace(Pair.__qualname__, "X") == repr(c).replace(Made.__qualname__, "X")
    assert hash(Pair(1, 2)) == hash(Made(1, 2))
    assert Pair(1, 2) != Made(1, 2)
    looped = Pair([])
    looped.left.append(looped)
    assert repr(looped).endswith("(left=[...], right=None)")


def test_a_record_must_write_its_init() -> None:
    with pytest.raises(TypeError, match="writes its own __init__"):
        @record()
        class Nothing:
            x: int

"""Tool input schemas as models are sent them: without pydantic's noise, and
in the subset of JSON Schema that OpenAI's strict mode accepts.

Pure functions on JSON values: nothing here knows a tool, a session or a
provider's SDK.
"""

from __future__ import annotations

import copy
import json
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["clean_schema", "model_schema", "strict_schema"]

# One cleaned schema per input-model class: a plugin whose thousand tools
# share one model pays pydantic's schema generation (about 2 ms) once, not
# per tool. Keyed by the class object itself (two classes of one name in
# different modules are two entries), weakly, so a class made and dropped
# at run time is not kept alive.
_MODEL_SCHEMAS: weakref.WeakKeyDictionary[type[Any], dict[str, Any]] = weakref.WeakKeyDictionary()

# Keywords strict mode rejects; their values move into the description, so
# the model still reads the constraint (the handler's validation enforces it).
_STRICT_UNSUPPORTED = ("minLength", "maxLength", "patternProperties", "unevaluatedProperties", "propertyNames",
                       "minProperties", "maxProperties", "unevaluatedItems", "contains", "minContains",
                       "maxContains", "uniqueItems", "default")
_STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
_TYPED = ("type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const")
_NULL = {"type": "null"}


class _NotStrict(Exception):
    """The schema cannot be said in strict mode's subset without changing what it accepts."""


# --- noise ---------------------------------------------------------------------------


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic model's JSON Schema without what only costs the model tokens:
    ``title`` everywhere, and, for an optional field, the ``anyOf [X, null]``
    with ``default: null`` that ``X | None = None`` produces (an optional
    field may be left out; a null sent for it is read as absent too)."""
    return _clean(copy.deepcopy(schema))


def model_schema(model: type[BaseModel], *, cached: bool = True) -> dict[str, Any]:
    """``clean_schema(model.model_json_schema())``, made once per model class.

    Each caller gets its own copy of the top level; the nested values are
    shared with the other tools of that model, as an ``input_schema``'s are:
    read them, never change them in place. ``cached=False`` builds it afresh
    (and keeps nothing), for comparing."""
    if not cached:
        return clean_schema(model.model_json_schema())
    schema = _MODEL_SCHEMAS.get(model)
    if schema is None:
        schema = _MODEL_SCHEMAS[model] = clean_schema(model.model_json_schema())
    return dict(schema)


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(n) for n in node]
    if not isinstance(node, dict):
        return node
    node.pop("title", None)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            node[key] = {name: _clean(sub) for name, sub in node[key].items()}
    props = node.get("properties")
    if isinstance(props, dict):
        needed = tuple(node.get("required", ()))
        node["properties"] = {name: _clean_property(sub, name in needed) for name, sub in props.items()}
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            node[key] = _clean(node[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(node.get(key), list):
            node[key] = [_clean(sub) for sub in node[key]]
    return node


def _clean_property(prop: Any, required: bool) -> Any:
    prop = _clean(prop)
    if required or not isinstance(prop, dict) or prop.get("default", ...) is not None:
        return prop
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or _NULL not in branches:
        return prop
    rest = [b for b in branches if b != _NULL]
    if len(rest) != 1 or not isinstance(rest[0], dict):
        return prop
    merged = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    return {**rest[0], **merged}


# --- strict mode ---------------------------------------------------------------------


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema in OpenAI's strict subset, or None when it cannot be said
    there (an open object, an untyped value, an ``allOf`` of several parts).

    Every object is closed (``additionalProperties: false``) and lists every
    property as required; a property that was optional becomes nullable, and
    the pipeline reads a null for it as "not given" (see
    ``_arguments.drop_unset_nulls``). Keywords strict mode rejects, ``default``
    among them, are moved into the description.
    """
    root = copy.deepcopy(schema)
    if root.get("type", "object") != "object" or "anyOf" in root or "oneOf" in root:
        return None
    root["type"] = "object"
    try:
        return _strict(root, depth=0)
    except (_NotStrict, RecursionError):
        return None


def _strict(node: Any, depth: int) -> Any:
    if depth > 40 or not isinstance(node, dict):
        raise _NotStrict
    for key in ("title", "$schema", "discriminator", "$id"):
        node.pop(key, None)
    _move_to_description(node)
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            node[key] = {name: _strict(sub, depth + 1) for name, sub in node[key].items()}
    if "oneOf" in node:
        node["anyOf"] = [*node.get("anyOf", []), *node.pop("oneOf")]
    if "allOf" in node:
        parts = node.pop("allOf")
        if len(parts) != 1 or not isinstance(parts[0], dict):
            raise _NotStrict
        node = {**parts[0], **node}
    if "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith(("#/$defs/", "#/definitions/")) and ref != "#":
            raise _NotStrict
        if len(node) > 1:  # strict mode allows no siblings beside $ref, but allows them beside anyOf
            node["anyOf"] = [{"$ref": node.pop("$ref")}]
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [_strict(sub, depth + 1) for sub in node["anyOf"]]
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if kind is None and "properties" in node:
        kinds = ["object"]
        node["type"] = "object"
    if "object" in kinds:
        extra = node.get("additionalProperties", False)
        if extra is not False:
            raise _NotStrict  # a map of any keys cannot be closed without refusing what it accepts
        props = node.get("properties", {})
        if not isinstance(props, dict):
            raise _NotStrict
        needed = set(node.get("required", ()))
        node["properties"] = {name: (_strict(sub, depth + 1) if name in needed
                                     else _nullable(_strict(sub, depth + 1))) for name, sub in props.items()}
        node["required"] = list(props)
        node["additionalProperties"] = False
    if "array" in kinds:
        items = node.get("items")
        if not (isinstance(items, dict) and any(k in items for k in _TYPED)):
            raise _NotStrict
        node["items"] = _strict(items, depth + 1)
    if not any(k in node for k in _TYPED):
        raise _NotStrict  # an untyped value ("any")
    return node


def _move_to_description(node: dict[str, Any]) -> None:
    notes = []
    for key in _STRICT_UNSUPPORTED:
        if key in node:
            value = node.pop(key)
            if key == "default" and value is None:
                continue
            notes.append(f"{key} {json.dumps(value)}")
    fmt = node.get("format")
    if fmt is not None and fmt not in _STRICT_FORMATS:
        notes.append(f"format {json.dumps(node.pop('format'))}")
    pattern = node.get("pattern")
    if isinstance(pattern, str) and any(t in pattern for t in _LOOKAROUND):
        notes.append(f"pattern {json.dumps(node.pop('pattern'))}")
    if notes:
        text = "; ".join(notes)
        node["description"] = f"{node['description']} ({text})" if node.get("description") else f"({text})"


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` that also accepts null (an optional property in strict mode)."""
    kind = node.get("type")
    if "anyOf" in node:
        if _NULL not in node["anyOf"]:
            node["anyOf"].append(dict(_NULL))
        return node
    if "enum" in node:
        if None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
        elif isinstance(kind, list) and "null" not in kind:
            node["type"] = [*kind, "null"]
        return node
    if isinstance(kind, str) and "const" not in node:
        node["type"] = [kind, "null"] if kind != "null" else "null"
        return node
    if isinstance(kind, list) and "const" not in node:
        if "null" not in kind:
            node["type"] = [*kind, "null"]
        return node
    description = node.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [node, dict(_NULL)]}
    if description:
        wrapped["description"] = description
    return wrapped

"""A call's arguments: pegboard's own parameters taken out and type-checked,
the rest validated by the tool's model (or, for a schema from elsewhere,
checked and reported as an advisory), and validation errors described so the
model can fix its call; and the decision for a call as the pipeline reaches
it, without running it (``decide_call``: ``Session.decide`` and the CLI's
``permissions check``). Apart from the pipeline, so that deciding imports no
event loop (asyncio is a fair share of a cold ``permissions check``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from .._api.decisions import Decision, PermissionRequest
from .._api.tools import Tool, ToolResult
from .tracing import decision_span, record_decision, tracer

if TYPE_CHECKING:
    from .session import Session

__all__ = ["RESERVED_PARAMETERS", "Refusal", "as_mapping", "decide_call", "describe_type", "drop_unset_nulls",
           "parse_arguments", "reserved_owned", "show_value", "split_reserved", "tool_parameters", "validate"]

RESERVED_PARAMETERS = ("background", "scratchpad")


# --- per-tool caches -----------------------------------------------------------
# Tools are frozen dataclasses whose cached_property values live in __dict__;
# the pipeline keeps its own derived facts there too, so they are computed once
# per tool and not once per call (this is most of the pipeline's speed).


def tool_parameters(tool: Tool) -> dict[str, Any]:
    """The tool's own parameters (name → JSON Schema property)."""
    cached = tool.__dict__.get("_parameters")
    if cached is None:
        cached = dict(tool.schema.get("properties", {}))
        tool.__dict__["_parameters"] = cached
    return cached  # type: ignore[no-any-return,unused-ignore]


def reserved_owned(tool: Tool) -> tuple[bool, bool]:
    """Whether ``background`` / ``scratchpad`` are pegboard's on this tool
    (False when the tool has a parameter of that name: then it is the tool's)."""
    cached = tool.__dict__.get("reserved_owned")
    if cached is None:
        if _plainly_without_reserved(tool):
            cached = (True, True)
        else:
            own = tool_parameters(tool)
            cached = ("background" not in own, "scratchpad" not in own)
        tool.__dict__["reserved_owned"] = cached
    return cached  # type: ignore[no-any-return,unused-ignore]


def _plainly_without_reserved(tool: Tool) -> bool:
    """True when the tool's JSON Schema surely has no reserved parameter,
    known from its model's fields without building the schema (about 8M
    instructions of a cold decision): no field of a reserved name, and
    nothing that makes a property's name other than the field's (an alias,
    an alias generator) or adds properties (``json_schema_extra``, a model
    of its own schema code, a root model). Otherwise the schema answers;
    tests/core/engine/test_pipeline.py holds the two to the same answer."""
    model = tool.model if tool.input_schema is None else None
    if model is None or getattr(model, "__pydantic_root_model__", False) \
            or model.model_config.get("json_schema_extra") is not None \
            or model.model_config.get("alias_generator") is not None:
        return False
    for own, base in ((model.model_json_schema, BaseModel.model_json_schema),
                      (model.__get_pydantic_json_schema__, BaseModel.__get_pydantic_json_schema__)):
        if getattr(own, "__func__", None) is not getattr(base, "__func__", ()):
            return False
    return all(name not in RESERVED_PARAMETERS and field.alias is None and field.validation_alias is None
               and field.json_schema_extra is None for name, field in model.model_fields.items())


def _validation(tool: Tool, model: type[BaseModel]) -> tuple[Any, ...]:
    """What validating ``model`` needs, worked out once per tool: (the model;
    its class namespace, read live; whether it keeps pydantic's own
    ``model_validate``; whether it silently drops unknown arguments)."""
    own = tool.__dict__.get("_validate")
    if own is None or own[0] is not model:
        # Its validator's validate_python is what pydantic's model_validate
        # calls (the classmethod's checks of options no call here passes cost
        # a fifth of a validation); found in the class's own namespace, since
        # model.__pydantic_validator__ goes through the metaclass's
        # __getattr__ hook. Read at every call: a model rebuilt later (its
        # first validation, with defer_build) puts a new validator there.
        plain = getattr(model.model_validate, "__func__", None) is getattr(BaseModel.model_validate, "__func__", ())
        namespace = model.__dict__
        plain = plain and "__pydantic_validator__" in namespace
        # True when the model drops unknown arguments (pydantic's default), so a
        # misspelt optional argument would otherwise vanish unseen.
        ignores_extra = model.model_config.get("extra", "ignore") == "ignore"
        own = tool.__dict__["_validate"] = (model, namespace, plain, ignores_extra)
    return own  # type: ignore[no-any-return,unused-ignore]


class Refusal(Exception):
    """The call stops here with this message as its (error) result."""

    def __init__(self, message: str):
        self.result = ToolResult.error(message)


# --- reserved parameters ---------------------------------------------------------


def split_reserved(background_enabled: bool, tool: Tool, args: dict[str, Any]) -> tuple[bool, str | None]:
    """Take pegboard's own parameters out of ``args`` and check their types
    (``background_enabled``: ``[background] enabled``).

    They decide what a call does, so a wrong type refuses the call instead of
    being read as absent (that would silently turn a detached call into a
    blocking one, or drop output the model asked to keep). ``null`` is absent,
    which is what models send for an optional argument they do not use. A tool
    with a parameter of the same name keeps it: untouched, not interpreted.
    """
    owns_background, owns_scratchpad = tool.__dict__.get("reserved_owned") or reserved_owned(tool)
    background, scratchpad = False, None
    if owns_background and "background" in args:
        value = args.pop("background")
        if value is not None:
            if not isinstance(value, bool):
                raise Refusal(f"background must be a boolean (true or false), not {show_value(value)}; "
                               f"{tool.name} was not run.")
            if value and not background_enabled:
                raise Refusal(f"background calls are switched off ([background] enabled = false); "
                               f"{tool.name} was not run. Call it again without background.")
            background = value
    if owns_scratchpad and "scratchpad" in args:
        value = args.pop("scratchpad")
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise Refusal(f"scratchpad must be a non-empty string naming the entry, not {show_value(value)}; "
                               f"{tool.name} was not run.")
            scratchpad = value.strip()
    return background, scratchpad


def show_value(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- validation ------------------------------------------------------------------


def describe_type(prop: Mapping[str, Any]) -> str:
    """A JSON Schema property as a short type phrase ("integer >= 1", "one of 'a', 'b')."""
    if "enum" in prop:
        return "one of " + ", ".join(show_value(v) for v in prop["enum"])
    if "const" in prop:
        return f"exactly {show_value(prop['const'])}"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            kinds = [describe_type(p) for p in prop[key]]
            return " or ".join(k for k in dict.fromkeys(kinds) if k)
    if "$ref" in prop:
        return "object (" + str(prop["$ref"]).rsplit("/", 1)[-1] + ")"
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = " or ".join(map(str, kind))
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        kind = f"array of {describe_type(prop['items'])}"
    bounds = [f"{op} {prop[key]}" for key, op in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"),
                                                   ("exclusiveMaximum", "<"), ("minLength", "length >="),
                                                   ("maxLength", "length <=")) if key in prop]
    return " ".join([str(kind or "any"), *bounds]) if kind or bounds else ""


def _locate(schema: Mapping[str, Any], loc: Sequence[int | str]) -> tuple[str, Mapping[str, Any] | None]:
    """A pydantic error location as the model would write the field
    (``edits[0].old_string``), and the JSON Schema of that field.

    Pydantic puts union members in the location (``('x', 'int')``); they are
    not fields the model knows of, so they are left out.
    """
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Mapping[str, Any]:
        for _ in range(20):  # $ref chains are short; a loop guards against cycles
            if not (isinstance(node, Mapping) and "$ref" in node):
                break
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        return node if isinstance(node, Mapping) else {}

    def branches(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [resolve(b) for b in node.get("anyOf", node.get("oneOf", []))]

    node: Mapping[str, Any] = resolve(schema)
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            holder = node if "items" in node else next((b for b in branches(node) if "items" in b), None)
            parts.append(f"[{part}]")
            node = resolve(holder["items"]) if holder is not None else {}
            continue
        holder = node if part in node.get("properties", {}) else next(
            (b for b in branches(node) if part in b.get("properties", {})), None)
        if holder is not None:
            parts.append(f".{part}")
            node = resolve(holder["properties"][part])
        elif isinstance(node.get("additionalProperties"), Mapping):
            parts.append(f"[{json.dumps(part)}]")
            node = resolve(node["additionalProperties"])
        elif branches(node):
            continue  # a union member's tag, not a field
        else:
            parts.append(f".{part}")
            node = {}
    return "".join(parts).lstrip(".") or "(arguments)", (node if parts else None)


def _describe_validation(tool: Tool, exc: ValidationError, *, rewritten: bool = False) -> str:
    head = (f"A pre-call hook rewrote the arguments of {tool.name} into invalid ones; nothing was run:"
            if rewritten else f"Invalid arguments for {tool.name}; nothing was run:")
    props = tool_parameters(tool)
    # One line per field: a union's members each report, but it is one field.
    fields: dict[str, list[Any]] = {}
    for err in exc.errors(include_url=False):
        loc = err["loc"]
        if err["type"] == "extra_forbidden":
            where = _locate(tool.schema, loc[:-1])[0] if len(loc) > 1 else ""
            name = f"{where}.{loc[-1]}" if where and where != "(arguments)" else str(loc[-1])
            takes = ", ".join(props) if len(loc) == 1 else "see the schema"
            fields[name] = [f"not a parameter of {tool.name}; it takes: {takes or 'nothing'}"]
            continue
        field, prop = _locate(tool.schema, loc)
        expected = describe_type(prop) if prop else ""
        if err["type"] == "missing":
            desc = f" ({prop['description']})" if prop and prop.get("description") else ""
            fields[field] = [f"required but missing; expected {expected or 'a value'}{desc}"]
            continue
        entry = fields.setdefault(field, [[], expected, err.get("input")])
        if isinstance(entry[0], list) and err["msg"] not in entry[0]:
            entry[0].append(err["msg"])
    lines = [head]
    for field, entry in fields.items():
        if isinstance(entry[0], str):
            lines.append(f"- {field}: {entry[0]}")
            continue
        messages, expected, given = entry
        hint = f"; expected {expected}" if expected else ""
        lines.append(f"- {field}: {' / '.join(messages)}{hint} (got {show_value(given)})")
    return "\n".join(lines)


def _external_validator(tool: Tool) -> Any:
    cached = tool.__dict__.get("_validator")
    if cached is None:
        import jsonschema  # type: ignore[import-untyped,unused-ignore]  # only external schemas (MCP) pay for it

        try:
            cls = jsonschema.validators.validator_for(tool.schema, default=jsonschema.Draft202012Validator)
            cls.check_schema(tool.schema)
            cached = cls(tool.schema)
        except Exception:  # a server's broken schema: nothing to check against
            cached = False
        tool.__dict__["_validator"] = cached
    return cached


def drop_unset_nulls(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` without the nulls sent for optional properties that do not
    take null: models send null for an argument they leave out (in OpenAI's
    strict mode they must, since every property is required there), and
    such a null means "not given", not a wrong type. Nested objects too."""
    try:
        if not _has_null(value):
            return value
    except _TooDeep:
        return value  # validate refuses it, with the tool's name
    return _drop_nulls(schema, value, schema.get("$defs", {}), 0)


# Arrays and objects inside one another, at most: no tool's input needs more,
# and each step below (the null scan, pydantic, the audit's JSON) recurses.
MAX_NESTING = 100


class _TooDeep(Exception):
    pass


def _has_null(value: Any, depth: int = 0) -> bool:
    """Whether a null is anywhere in ``value``; _TooDeep past MAX_NESTING.
    The whole value is walked, null or not, so the depth is always checked."""
    if depth >= MAX_NESTING:
        raise _TooDeep
    found = False
    # loops rather than any(generator): this runs for every call's arguments
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        if v is None or isinstance(v, (dict, list)) and _has_null(v, depth + 1):
            found = True
    return found


def _too_deep(name: str) -> Refusal:
    return Refusal(f"The arguments for {name} are nested more than {MAX_NESTING} levels deep (arrays or objects "
                   f"inside one another); nothing was run. Send a flatter value, or the deep part as a string.")


def _resolve(node: Any, defs: Mapping[str, Any]) -> Mapping[str, Any]:
    for _ in range(20):
        if not (isinstance(node, Mapping) and isinstance(node.get("$ref"), str)):
            break
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    return node if isinstance(node, Mapping) else {}


def _takes_null(node: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or isinstance(kind, list) and "null" in kind:
        return True
    if "enum" in node:
        return None in node["enum"]
    if not node or ("type" not in node and not any(k in node for k in ("anyOf", "oneOf", "$ref", "const"))):
        return True  # any value
    return any(_takes_null(_resolve(b, defs), defs) for b in node.get("anyOf", node.get("oneOf", ())))


def _drop_nulls(schema: Any, value: Any, defs: Mapping[str, Any], depth: int) -> Any:
    node = _resolve(schema, defs)
    if depth > 20 or not node:
        return value
    branches = [_resolve(b, defs) for b in node.get("anyOf", node.get("oneOf", ()))]
    if isinstance(value, dict):
        holder = node if "properties" in node else next((b for b in branches if "properties" in b), None)
        if holder is None:
            return value
        props, needed = holder["properties"], set(holder.get("required", ()))
        out = {}
        for key, item in value.items():
            prop = _resolve(props.get(key), defs) if key in props else None
            if item is None and prop is not None and key not in needed and not _takes_null(prop, defs):
                continue
            out[key] = _drop_nulls(prop, item, defs, depth + 1) if prop is not None else item
        return out
    if isinstance(value, list):
        holder = node if "items" in node else next((b for b in branches if "items" in b), None)
        if holder is None:
            return value
        return [_drop_nulls(holder["items"], item, defs, depth + 1) for item in value]
    return value


def validate(tool: Tool, args: dict[str, Any], *, rewritten: bool = False) -> tuple[Any, str | None]:
    """The handler's argument and, where something was off but not fatal, an advisory."""
    try:
        nulls = _has_null(args)
    except _TooDeep:
        raise _too_deep(tool.name) from None
    if nulls:  # the schema is built only when a null may need dropping
        args = drop_unset_nulls(tool.schema, args)
    model = tool.model
    if model is not None:
        own = tool.__dict__.get("_validate")  # (_validation's answer, without its call once made)
        _, namespace, plain, ignores_extra = own if own is not None and own[0] is model else _validation(tool, model)
        try:
            validated = (namespace["__pydantic_validator__"].validate_python if plain
                         else model.model_validate)(args)
        except ValidationError as exc:
            raise Refusal(_describe_validation(tool, exc, rewritten=rewritten)) from None
        advisory = None
        if ignores_extra:
            props = tool_parameters(tool)
            unknown = [k for k in args if k not in props and k not in model.model_fields]
            if unknown:
                advisory = (f"Note: {tool.name} ignored unknown argument(s) {', '.join(map(repr, unknown))}; "
                            f"it takes: {', '.join(props) or 'no arguments'}.")
        return validated, advisory
    # An external schema (MCP): the server is the authority on what it
    # accepts, so a mismatch is reported but the call goes through.
    validator = _external_validator(tool)
    if not validator:
        return args, None
    problems = [f"{'.'.join(map(str, e.absolute_path)) or '(arguments)'}: {e.message}"
                for e in validator.iter_errors(args)]
    if not problems:
        return args, None
    return args, ("Advisory: these arguments do not match the tool's published schema; the call was sent "
                  "anyway because the server decides what it accepts:\n- " + "\n- ".join(problems[:10]))


def as_mapping(value: Any) -> dict[str, Any]:
    """The validated input as permission votes and hooks see it: keyed as in
    the tool's schema (by alias), so it reads like what the model sent and a
    hook's rewrite of it validates again as it is."""
    # (the models seen before first: isinstance of BaseModel goes through ABCMeta's check)
    plain = _PLAIN_DUMP.get(type(value))
    if plain is None:
        if not isinstance(value, BaseModel):
            return dict(value)
        plain = _PLAIN_DUMP[type(value)] = _dumps_as_fields(type(value))
    # A model of plain fields dumps as its fields: a copy of them costs a
    # tenth of model_dump's 13K instructions (a test holds the two equal).
    return dict(value.__dict__) if plain else value.model_dump(by_alias=True)


_PLAIN_DUMP: dict[type[BaseModel], bool] = {}
_PLAIN_TYPES = (str, int, float, bool, type(None))


def _dumps_as_fields(model: type[BaseModel]) -> bool:
    """Whether ``model_dump(by_alias=True)`` of every instance of ``model``
    is its fields as they are: every field a str, number, bool or None (or
    a union of those), under its own name, with nothing that changes the
    dump (a serializer, a computed field, extra fields, an exclusion)."""
    import types
    import typing

    import annotated_types

    decorators = model.__pydantic_decorators__
    if (model.__pydantic_root_model__ or model.model_config.get("extra") == "allow"
            or model.__pydantic_computed_fields__ or decorators.field_serializers or decorators.model_serializers):
        return False
    for name, field in model.model_fields.items():
        if (field.alias not in (None, name) or field.serialization_alias not in (None, name) or field.exclude
                or getattr(field, "exclude_if", None) is not None):
            return False
        if not all(isinstance(m, annotated_types.BaseMetadata) for m in field.metadata):
            return False
        kind = field.annotation
        members = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else (kind,)
        if not all(member in _PLAIN_TYPES for member in members):
            return False
    return True


def parse_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """A call's arguments as a dict: a JSON string parsed, None as no arguments."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise Refusal(f"The arguments for {name} are not valid JSON ({exc}); nothing was run.") from None
        except RecursionError:
            raise _too_deep(name) from None
    if type(arguments) is dict:  # the common case, before the ABC check (a Python-level isinstance)
        return dict(arguments)
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise Refusal(f"The arguments for {name} must be a JSON object, not {type(arguments).__name__}; "
                       "nothing was run.")
    return dict(arguments)


# --- deciding without running ------------------------------------------------------


def decide_call(session: Session, name: str, arguments: Any) -> Decision:
    """The decision for a call as the pipeline reaches it before anyone is
    asked, without running anything: pegboard's own parameters taken out,
    the input validated, then the permission engine ("ask": a person, or in
    auto mode the classifier, would be consulted). A call that could not
    run is a deny whose source says why ("catalogue", "validation")."""
    toolbox = session.toolbox
    tool = toolbox.tools.get(name)
    if tool is None or session.hides(tool):
        return Decision("deny", toolbox.why_unavailable(name, session), "catalogue")
    try:
        args = parse_arguments(name, arguments)
        split_reserved(toolbox.settings.core.background.enabled, tool, args)
        validated, _ = validate(tool, args)
    except Refusal as refusal:
        return Decision("deny", refusal.result.text_content(), "validation")
    request = PermissionRequest(tool=tool, input=as_mapping(validated), session=session, policy=session.policy)
    found = tracer()
    if found is None:
        return toolbox.permissions.evaluate(request)

    with decision_span(found, name, None) as current:
        decision = toolbox.permissions.evaluate(request)
        record_decision(current, decision)
    return decision

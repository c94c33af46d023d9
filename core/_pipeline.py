"""One call through the whole pipeline, and batches of calls.

validate → decide permission → pre-call hooks → run (with its timeout, or in
the background) → post-call hooks → shape the result (scratchpad, spill,
notes). Every failure along the way becomes an error result the model can act
on; nothing here raises into the agent loop (only the caller's own
cancellation and KeyboardInterrupt pass through).

See docs/pipeline.md for the flow as a plugin author or host sees it.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ._decisions import PermissionRequest
from ._plugins import _short_error
from ._tools import TextContent, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["MAX_PARALLEL", "RESERVED_PARAMETERS", "BatchCall", "run_batch", "run_call", "tool_parameters"]

RESERVED_PARAMETERS = ("background", "scratchpad")
DEFAULT_TIMEOUT_S = 600.0
MAX_PARALLEL = 10
PREVIEW_CHARS = 2_000

# One call of a batch: (name, arguments) or (name, arguments, call_id).
BatchCall = tuple[str, Any] | tuple[str, Any, str]


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


def _reserved_owned(tool: Tool) -> tuple[bool, bool]:
    """Whether ``background`` / ``scratchpad`` are pegboard's on this tool
    (False when the tool has a parameter of that name: then it is the tool's)."""
    cached = tool.__dict__.get("_reserved_owned")
    if cached is None:
        own = tool_parameters(tool)
        cached = ("background" not in own, "scratchpad" not in own)
        tool.__dict__["_reserved_owned"] = cached
    return cached  # type: ignore[no-any-return,unused-ignore]


def _ignores_extra(tool: Tool) -> bool:
    """True when the tool's model silently drops unknown arguments (pydantic's
    default), so a misspelt optional argument would otherwise vanish unseen."""
    cached = tool.__dict__.get("_ignores_extra")
    if cached is None:
        model = tool.model
        cached = model is not None and model.model_config.get("extra", "ignore") == "ignore"
        tool.__dict__["_ignores_extra"] = cached
    return cached  # type: ignore[no-any-return,unused-ignore]


class _Refusal(Exception):
    """The call stops here with this message as its (error) result."""

    def __init__(self, message: str):
        self.result = ToolResult.error(message)


# --- reserved parameters ---------------------------------------------------------


def _split_reserved(session: Session, tool: Tool, args: dict[str, Any]) -> tuple[bool, str | None]:
    """Take pegboard's own parameters out of ``args`` and check their types.

    They decide what a call does, so a wrong type refuses the call instead of
    being read as absent (that would silently turn a detached call into a
    blocking one, or drop output the model asked to keep). ``null`` is absent,
    which is what models send for an optional argument they do not use. A tool
    with a parameter of the same name keeps it: untouched, not interpreted.
    """
    owns_background, owns_scratchpad = _reserved_owned(tool)
    background, scratchpad = False, None
    if owns_background and "background" in args:
        value = args.pop("background")
        if value is not None:
            if not isinstance(value, bool):
                raise _Refusal(f"background must be a boolean (true or false), not {_show(value)}; "
                               f"{tool.name} was not run.")
            if value and not session.toolbox.settings.core.background.enabled:
                raise _Refusal(f"background calls are switched off ([background] enabled = false); "
                               f"{tool.name} was not run. Call it again without background.")
            background = value
    if owns_scratchpad and "scratchpad" in args:
        value = args.pop("scratchpad")
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise _Refusal(f"scratchpad must be a non-empty string naming the entry, not {_show(value)}; "
                               f"{tool.name} was not run.")
            scratchpad = value.strip()
    return background, scratchpad


def _show(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- validation ------------------------------------------------------------------


def _describe_type(prop: Mapping[str, Any]) -> str:
    """A JSON Schema property as a short type phrase ("integer >= 1", "one of 'a', 'b')."""
    if "enum" in prop:
        return "one of " + ", ".join(_show(v) for v in prop["enum"])
    if "const" in prop:
        return f"exactly {_show(prop['const'])}"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            kinds = [_describe_type(p) for p in prop[key]]
            return " or ".join(k for k in dict.fromkeys(kinds) if k)
    if "$ref" in prop:
        return "object (" + str(prop["$ref"]).rsplit("/", 1)[-1] + ")"
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = " or ".join(map(str, kind))
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        kind = f"array of {_describe_type(prop['items'])}"
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
        expected = _describe_type(prop) if prop else ""
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
        lines.append(f"- {field}: {' / '.join(messages)}{hint} (got {_show(given)})")
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


def _validate(tool: Tool, args: dict[str, Any], *, rewritten: bool = False) -> tuple[Any, str | None]:
    """The handler's argument and, where something was off but not fatal, an advisory."""
    model = tool.model
    if model is not None:
        try:
            validated = model.model_validate(args)
        except ValidationError as exc:
            raise _Refusal(_describe_validation(tool, exc, rewritten=rewritten)) from None
        advisory = None
        if _ignores_extra(tool):
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


def _as_mapping(value: Any) -> dict[str, Any]:
    """The validated input as permission votes and hooks see it: keyed as in
    the tool's schema (by alias), so it reads like what the model sent and a
    hook's rewrite of it validates again as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True)
    return dict(value)


def _deferred_note(session: Session, tool: Tool, args: Mapping[str, Any]) -> str | None:
    """For a deferred tool called before its schema was loaded: name the
    documented parameters the call left out, once per tool per session, so a
    wrong default is not invisible."""
    if tool.loading != "deferred" or tool.name in session.loaded:
        return None
    props = tool_parameters(tool)
    missing = [name for name in props if name not in args]
    if not missing or not session.note_once(f"core:deferred-params:{tool.name}"):
        return None
    lines = [f"Note: {tool.name} was called without loading its schema (ToolSearch select:{tool.name}); "
             "these documented parameters were left out:"]
    for name in missing:
        prop = props[name]
        default = f", default {_show(prop['default'])}" if "default" in prop else ", no default"
        desc = f": {prop['description']}" if prop.get("description") else ""
        lines.append(f"- {name} ({_describe_type(prop) or 'any'}{default}){desc}")
    return "\n".join(lines)


# --- permission and hooks --------------------------------------------------------


async def _authorize(session: Session, tool: Tool, input: Mapping[str, Any], call_id: str) -> None:
    # The call id lets a plugin tie what its vote checked to the call that runs.
    request = PermissionRequest(tool=tool, input=input, session=session, policy=session.policy,
                                extra={"call_id": call_id})
    permissions = session.toolbox.permissions
    if session.toolbox.hook.pegboard_ask.get_hookimpls():
        # With a person to ask, the calls of a session decide one at a time,
        # in call order: the person sees one question at a time, and an
        # "always allow" answer already counts for the calls queued behind it.
        # A decision that asks no one holds the lock without awaiting.
        async with session.ask_lock:
            decision = await permissions.authorize(request)
    else:
        decision = await permissions.authorize(request)
    if decision.decision != "allow":
        raise _Refusal(f"Permission denied for {tool.name}: {decision.reason} (decided by {decision.source}).")


async def _call_hook(impl: Any, kwargs: Mapping[str, Any]) -> Any:
    """Call one hook implementation with the arguments it names; a host may
    implement pipeline hooks as coroutines."""
    outcome = impl.function(*[kwargs[a] for a in impl.argnames])
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


async def _run_before_hooks(info: CallInfo) -> tuple[bool, list[str]]:
    """Run every pre-call hook in order; each sees the input as the ones before
    it left it. Returns (rewritten?, context texts). A hook that fails or
    answers nonsense blocks the call: such hooks are often guards, and a
    broken guard must not wave calls through."""
    rewritten, context = False, []
    # reversed(): pluggy's own calling order (last registered first, tryfirst
    # and trylast honoured), so a plugin that marks its hook tryfirst gets it.
    for impl in reversed(info.session.toolbox.hook.pegboard_before_call.get_hookimpls()):
        try:
            verdict = await _call_hook(impl, {"call": info})
        except Exception as exc:
            raise _Refusal(f"{info.tool.name} was blocked: the pre-call hook of {impl.plugin_name!r} failed "
                           f"({_short_error(exc)}); nothing was run.") from None
        if verdict is None:
            continue
        if not isinstance(verdict, PreCall):
            raise _Refusal(f"{info.tool.name} was blocked: the pre-call hook of {impl.plugin_name!r} returned "
                           f"{type(verdict).__name__}, not PreCall; nothing was run.")
        if verdict.block is not None:
            raise _Refusal(verdict.block or f"{info.tool.name} was blocked by {impl.plugin_name!r}.")
        if verdict.input is not None:
            info.input = dict(verdict.input)
            rewritten = True
        if verdict.context:
            context.append(verdict.context)
    return rewritten, context


async def _run_after_hooks(info: CallInfo, result: ToolResult) -> ToolResult:
    """Each post-call hook sees the result as the ones before it left it. A
    failing hook cannot undo the call that already ran, so its failure is
    reported on the result and the remaining hooks still run."""
    for impl in reversed(info.session.toolbox.hook.pegboard_after_call.get_hookimpls()):
        try:
            replaced = await _call_hook(impl, {"call": info, "result": result})
        except Exception as exc:
            result = result.with_text_appended(f"(post-call hook of {impl.plugin_name!r} failed: "
                                               f"{_short_error(exc)})")
            continue
        if isinstance(replaced, ToolResult):
            result = replaced
        elif replaced is not None:
            result = result.with_text_appended(f"(post-call hook of {impl.plugin_name!r} returned "
                                               f"{type(replaced).__name__}, not a ToolResult; ignored)")
    return result


# --- running ---------------------------------------------------------------------


class _Watchdog:
    """One timer per event loop for the deadlines of all running calls.

    ``asyncio.timeout`` would arm and disarm a timer per call (a heap push and
    a handle), the largest single cost of a fast call. Deadlines are mostly
    the 600 s default and calls mostly end long before them, so one timer,
    armed at the earliest deadline seen and re-armed when it fires, does the
    same work for a dict insert and pop. Expiry cancels the call's task, the
    same mechanism ``asyncio.timeout`` uses.
    """

    def __init__(self) -> None:
        # No reference to the loop: the registry below is keyed weakly by it,
        # and a value holding its key would keep every closed loop alive.
        self._calls: dict[int, list[Any]] = {}  # token -> [deadline, task, expired]
        self._tokens = itertools.count()
        self._armed_at = float("inf")
        self._handle: asyncio.TimerHandle | None = None

    def add(self, loop: asyncio.AbstractEventLoop, seconds: float, task: asyncio.Task[Any]) -> int:
        deadline = loop.time() + seconds
        token = next(self._tokens)
        self._calls[token] = [deadline, task, False]
        if deadline < self._armed_at:
            self._arm(loop, deadline)
        return token

    def remove(self, token: int) -> bool:
        """Forget a call; True when its deadline passed and it was cancelled."""
        entry = self._calls.pop(token, None)
        return bool(entry and entry[2])

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = deadline
        self._handle = loop.call_at(deadline, self._fire)

    def _fire(self) -> None:
        self._handle, self._armed_at = None, float("inf")
        loop = asyncio.get_running_loop()
        now, soonest = loop.time(), float("inf")
        for entry in self._calls.values():
            if entry[2]:
                continue
            if entry[0] <= now:
                entry[2] = True
                entry[1].cancel()
            else:
                soonest = min(soonest, entry[0])
        if soonest < float("inf"):
            self._arm(loop, soonest)


_watchdogs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watchdog] = weakref.WeakKeyDictionary()


def _watchdog(loop: asyncio.AbstractEventLoop) -> _Watchdog:
    dog = _watchdogs.get(loop)
    if dog is None:
        dog = _watchdogs[loop] = _Watchdog()
    return dog


async def _execute(session: Session, tool: Tool, validated: Any, call_id: str, uncapped: bool) -> ToolResult:
    ctx = ToolContext(session=session, tool=tool, config=session.toolbox.plugin_config(tool.plugin),
                      call_id=call_id, uncapped=uncapped)
    timeout = tool.timeout_s or DEFAULT_TIMEOUT_S
    task = asyncio.current_task()
    assert task is not None  # run_call is always awaited inside a task
    cancelling = task.cancelling()
    loop = asyncio.get_running_loop()
    dog = _watchdog(loop)
    token = dog.add(loop, timeout, task)
    try:
        outcome = await tool.invoke(validated, ctx)
    except asyncio.CancelledError:
        expired = dog.remove(token)
        # Ours only if the watchdog cancelled and nobody else did as well (as
        # asyncio.timeout decides); an outer cancellation passes through.
        if expired and task.uncancel() <= cancelling:
            return ToolResult.error(f"{tool.name} did not finish within {timeout:g} s and was stopped. "
                                    "Try a smaller piece of work"
                                    + (", or run it in the background."
                                       if session.toolbox.settings.core.background.enabled else "."))
        if expired or task.cancelling() > cancelling:
            raise  # our caller is being cancelled: that is not the tool's failure
        return ToolResult.error(f"{tool.name} failed: it was cancelled from inside (CancelledError).")
    except (Exception, SystemExit) as exc:  # SystemExit too: a tool calling sys.exit must not end the agent
        if dog.remove(token):
            task.uncancel()  # the deadline passed as it failed: the failure is the news
        return ToolResult.error(f"{tool.name} failed: {type(exc).__name__}: {exc}")
    else:
        if dog.remove(token):
            # The deadline passed just as the tool returned (or it swallowed
            # the cancellation): take back the cancel, keep the result.
            task.uncancel()
    finally:
        # Whatever left (KeyboardInterrupt too), the watchdog must not keep a
        # task it could cancel later in the middle of something else.
        dog.remove(token)
    if isinstance(outcome, ToolResult):
        return outcome
    if isinstance(outcome, str):
        # model_construct: the text is known to be a str, and validating the
        # content union again costs more than the permission decision.
        return ToolResult.model_construct(content=[TextContent.model_construct(text=str(outcome))])
    return ToolResult.error(f"{tool.name} returned {_garbage(outcome)} instead of a ToolResult or a string; "
                            f"this is a bug in the plugin {tool.plugin!r}, not in your arguments.")


def _garbage(value: Any) -> str:
    if value is None:
        return "nothing (None)"
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} ({shown})"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _spill(session: Session, tool: Tool, text: str, call_id: str) -> Path:
    folder = session.data_dir / "results"
    folder.mkdir(exist_ok=True)
    path = folder / f"{_UNSAFE.sub('_', tool.name)}-{_UNSAFE.sub('_', call_id)}.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _shape(session: Session, tool: Tool, result: ToolResult, scratchpad: str | None, call_id: str) -> ToolResult:
    """Redirect to the scratchpad, or spill text over the limit to a file."""
    if scratchpad is not None:
        if result.is_error:
            # An error is what the model most needs to see; keep it inline.
            return result.with_text_appended(f"(Nothing was saved to scratchpad entry {scratchpad!r}.)")
        text = result.text_content()
        replaced = scratchpad in session.scratchpad
        session.scratchpad[scratchpad] = text
        others = [c for c in result.content if not isinstance(c, TextContent)]
        note = (f"Saved {len(text):,} characters of {tool.name} output to scratchpad entry {scratchpad!r}"
                f"{' (replacing the old entry)' if replaced else ''}. Read it with ScratchpadRead.")
        # structured_content goes too: it is the same output in another form,
        # and keeping it out of the conversation is the point.
        return ToolResult(content=[*others, TextContent(text=note)])
    limit = session.toolbox.settings.core.results.max_chars
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    if sum(map(len, texts)) <= limit:  # cheap check first: most results are small
        return result
    text = "\n".join(texts)
    try:
        where = f"The whole text is saved in {_spill(session, tool, text, call_id)}; read it in parts with " \
                "offset and limit."
    except OSError as exc:
        where = f"It could not be saved ({exc}); ask for less, e.g. with narrower arguments."
    note = f"\n\n[Output was {len(text):,} characters, over the {limit:,} limit; this is the first " \
           f"{PREVIEW_CHARS:,}. {where}]"
    others = [c for c in result.content if not isinstance(c, TextContent)]
    structured = result.structured_content
    if structured is not None and len(json.dumps(structured, default=str)) > limit:
        structured = None  # as large as the text it mirrors: a host would send it all the same
    return ToolResult(content=[*others, TextContent(text=text[:PREVIEW_CHARS] + note)],
                      structured_content=structured, is_error=result.is_error)


def _append_notes(result: ToolResult, notes: list[str]) -> ToolResult:
    if not notes:
        return result
    return result.model_copy(update={"content": [*result.content, *(TextContent(text=n) for n in notes)]})


def _parse_arguments(name: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise _Refusal(f"The arguments for {name} are not valid JSON ({exc}); nothing was run.") from None
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise _Refusal(f"The arguments for {name} must be a JSON object, not {type(arguments).__name__}; "
                       "nothing was run.")
    return dict(arguments)


async def run_call(session: Session, name: str, arguments: Any, call_id: str) -> ToolResult:
    """One call, start to finish. Never raises for anything a tool, a hook or
    the arguments did; the caller's own cancellation passes through."""
    try:
        return await _run_call(session, name, arguments, call_id)
    except _Refusal as refusal:
        return refusal.result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in the pipeline or a plugin hook: still only this call fails
        return ToolResult.error(f"{name} could not be run: internal error {_short_error(exc)}. "
                                "Other calls are not affected; report this if it repeats.")


async def _run_call(session: Session, name: str, arguments: Any, call_id: str) -> ToolResult:
    if session.closed:
        return ToolResult.error(f"{name} was not run: this session is closed.")
    tool = session.toolbox.offered_tool(name, session)
    if tool is None:
        return ToolResult.error(session.toolbox.why_unavailable(name, session))
    args = _parse_arguments(name, arguments)
    notes: list[str] = []
    background, scratchpad = _split_reserved(session, tool, args)
    validated, advisory = _validate(tool, args)
    if advisory:
        notes.append(advisory)
    mapping = _as_mapping(validated)
    await _authorize(session, tool, mapping, call_id)
    info = CallInfo(session=session, tool=tool, input=mapping, call_id=call_id)
    rewritten, context = await _run_before_hooks(info)
    if rewritten:
        # A rewritten input is a new call: validate it and decide again, so a
        # hook cannot smuggle a call past the permission rules.
        validated, _ = _validate(tool, info.input, rewritten=True)
        info.input = _as_mapping(validated)
        await _authorize(session, tool, info.input, call_id)
    notes.extend(context)
    # Only now, when the call will run: a refused call must not use up the
    # once-per-session note before the model could see it.
    if (note := _deferred_note(session, tool, args)) is not None:
        notes.insert(0, note)
    uncapped = scratchpad is not None and tool.lifts_caps_with_scratchpad
    if background:
        async def work() -> ToolResult:
            result = await _run_after_hooks(info, await _execute(session, tool, validated, call_id, uncapped))
            return _shape(session, tool, result, scratchpad, call_id)

        task_id = session.tasks.start(work(), kind="tool", description=f"{tool.name} (call {call_id})")
        started = ToolResult.text(f"Started {tool.name} in the background as {task_id}. Its result will be "
                                  f"delivered when it finishes; TaskOutput fetches it, TaskList lists tasks, "
                                  f"TaskStop stops it.")
        return _append_notes(started, notes)
    result = await _execute(session, tool, validated, call_id, uncapped)
    result = await _run_after_hooks(info, result)
    result = _shape(session, tool, result, scratchpad, call_id)
    return _append_notes(result, notes)


# --- batches -----------------------------------------------------------------------


# Tools that read what the scratchpad parameter writes (see run_batch).
SCRATCHPAD_READERS = frozenset({"ScratchpadRead", "ScratchpadList"})


def _plan(session: Session, calls: Sequence[BatchCall]) -> list[tuple[list[int], bool]]:
    """Split a batch into steps run one after another: (indices, side by side?).

    Consecutive read-only calls share a step. A scratchpad reader after a
    call of the same step that saves to the scratchpad starts a new step:
    "save it, then read it" in one reply must see the saved entry, although
    both calls are read-only.
    """
    toolbox = session.toolbox
    steps: list[tuple[list[int], bool]] = []
    group: list[int] = []
    saves = False
    for index, call in enumerate(calls):
        tool = toolbox.offered_tool(call[0], session)
        # A call of a tool that is not offered only produces an error and
        # changes nothing, so it need not split a group of reads.
        if tool is not None and not tool.read_only:
            if group:
                steps.append((group, True))
                group, saves = [], False
            steps.append(([index], False))
            continue
        if saves and call[0] in SCRATCHPAD_READERS:
            steps.append((group, True))
            group, saves = [], False
        group.append(index)
        saves = saves or (tool is not None and _saves_to_scratchpad(tool, call[1]))
    if group:
        steps.append((group, True))
    return steps


def _saves_to_scratchpad(tool: Tool, arguments: Any) -> bool:
    if not _reserved_owned(tool)[1]:
        return False
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return False
    return isinstance(arguments, Mapping) and arguments.get("scratchpad") is not None


async def run_batch(session: Session, calls: Sequence[BatchCall]) -> list[ToolResult]:
    """The calls of one model reply, results in call order.

    Consecutive read-only calls form a group and run side by side, at most
    ``MAX_PARALLEL`` at once (a slot frees as soon as any call ends, so one
    slow read holds up nobody in its group). Every other call runs alone, in
    order: it waits for every call before it, and every call after it waits
    for it. So a slow read before a write delays the write and the reads after
    it; that is the point, since those reads may depend on what the write did.
    """
    results: list[ToolResult | None] = [None] * len(calls)
    gate = asyncio.Semaphore(MAX_PARALLEL)

    async def one(index: int) -> None:
        call = calls[index]
        call_id = call[2] if len(call) > 2 else session.next_call_id()
        results[index] = await run_call(session, call[0], call[1], call_id)

    async def limited(index: int) -> None:
        async with gate:
            await one(index)

    for indices, side_by_side in _plan(session, calls):
        if side_by_side and len(indices) > 1:
            await asyncio.gather(*(limited(i) for i in indices))
        else:
            await one(indices[0])
    return [r if r is not None else ToolResult.error("internal error: this call produced no result")
            for r in results]


# At the end: _session imports this module's callers lazily, and importing it
# here once (not inside each call) keeps an import statement off the hot path.
from ._session import CallInfo, PreCall  # noqa: E402

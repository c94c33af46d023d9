"""One call through the whole pipeline, and batches of calls.

validate → decide permission → pre-call hooks → run (with its timeout, or in
the background) → post-call hooks → shape the result (scratchpad, spill,
notes). Every failure along the way becomes an error result the model can act
on; nothing here raises into the agent loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ._decisions import PermissionRequest
from ._plugins import _short_error
from ._tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ._session import CallInfo, Session

__all__ = ["RESERVED_PARAMETERS", "run_batch", "run_call", "tool_parameters"]

RESERVED_PARAMETERS = ("background", "scratchpad")
DEFAULT_TIMEOUT_S = 600.0
MAX_PARALLEL = 10
PREVIEW_CHARS = 2_000


def tool_parameters(tool: Tool) -> dict[str, Any]:
    """The tool's own parameters (name → JSON Schema property)."""
    cached = tool.__dict__.get("_parameters")
    if cached is None:
        cached = dict(tool.schema.get("properties", {}))
        tool.__dict__["_parameters"] = cached
    return cached  # type: ignore[no-any-return]


class _Refusal(Exception):
    def __init__(self, message: str):
        self.result = ToolResult.error(message)


def _split_reserved(session: Session, tool: Tool, args: dict[str, Any]) -> tuple[bool, str | None]:
    """Take pegboard's own parameters out of ``args`` (unless the tool has
    parameters of those names) and check their types strictly."""
    own = tool_parameters(tool)
    background, scratchpad = False, None
    if "background" not in own and "background" in args:
        value = args.pop("background")
        if value is not None:
            if not isinstance(value, bool):
                raise _Refusal(f"background must be true or false, not {json.dumps(value)}; the call was not run.")
            if value and not session.toolbox.settings.core.background.enabled:
                raise _Refusal("background calls are switched off ([background] enabled = false); "
                               "call again without background.")
            background = value
    if "scratchpad" not in own and "scratchpad" in args:
        value = args.pop("scratchpad")
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise _Refusal(f"scratchpad must be a non-empty string naming the entry, not {json.dumps(value)}; "
                               "the call was not run.")
            scratchpad = value.strip()
    return background, scratchpad


def _describe_validation(tool: Tool, exc: ValidationError) -> str:
    lines = [f"Invalid arguments for {tool.name}; nothing was run:"]
    props = tool_parameters(tool)
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        expected = props.get(str(err["loc"][0]), {}).get("type") if err["loc"] else None
        got = "" if err["type"] == "missing" else f" (got {json.dumps(err.get('input'), default=str)[:80]})"
        hint = f"; expected {expected}" if expected else ""
        lines.append(f"- {field}: {err['msg']}{hint}{got}")
    return "\n".join(lines)


def _validate(tool: Tool, args: dict[str, Any]) -> tuple[Any, str | None]:
    """The handler's argument and, for external schemas, an advisory."""
    model = tool.model
    if model is not None:
        try:
            return model.model_validate(args), None
        except ValidationError as exc:
            raise _Refusal(_describe_validation(tool, exc)) from None
    import jsonschema  # only tools with external schemas (MCP) get here

    validator = jsonschema.Draft202012Validator(tool.schema)
    problems = [f"{'.'.join(map(str, e.absolute_path)) or '(arguments)'}: {e.message}"
                for e in validator.iter_errors(args)]
    advisory = None
    if problems:
        advisory = ("Advisory: these arguments do not match the tool's published schema; the call was sent "
                    "anyway because the server decides what it accepts:\n- " + "\n- ".join(problems[:10]))
    return args, advisory


def _as_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return dict(value)


def _deferred_note(session: Session, tool: Tool, args: Mapping[str, Any]) -> str | None:
    if tool.loading != "deferred" or tool.name in session.loaded:
        return None
    props = tool_parameters(tool)
    missing = [name for name in props if name not in args and name not in RESERVED_PARAMETERS]
    if not missing or not session.note_once(f"core:deferred-params:{tool.name}"):
        return None
    lines = [f"Note: {tool.name} was called without loading its schema; these documented parameters were "
             "left out and took their defaults:"]
    for name in missing:
        prop = props[name]
        kind = prop.get("type") or " | ".join(str(a.get("type")) for a in prop.get("anyOf", [])) or "any"
        default = f", default {json.dumps(prop['default'])}" if "default" in prop else ""
        desc = f": {prop['description']}" if prop.get("description") else ""
        lines.append(f"- {name} ({kind}{default}){desc}")
    return "\n".join(lines)


async def _authorize(session: Session, tool: Tool, validated: Any) -> str | None:
    request = PermissionRequest(tool=tool, input=_as_mapping(validated), session=session, policy=session.policy)
    decision = await session.toolbox.permissions.authorize(request)
    if decision.decision == "allow":
        return None
    return f"Permission denied for {tool.name}: {decision.reason} (decided by {decision.source})."


def _run_before_hooks(info: CallInfo) -> tuple[dict[str, Any] | None, str | None, list[str]]:
    rewritten, context = None, []
    for impl in info.session.toolbox.hook.pegboard_before_call.get_hookimpls():
        try:
            verdict = impl.function(*[{"call": info}[a] for a in impl.argnames])
        except Exception as exc:
            return None, f"{info.tool.name} was blocked: the pre-call hook of {impl.plugin_name!r} failed " \
                         f"({_short_error(exc)})", context
        if verdict is None:
            continue
        if verdict.block:
            return None, verdict.block, context
        if verdict.input is not None:
            rewritten = dict(verdict.input)
            info.input = rewritten
        if verdict.context:
            context.append(verdict.context)
    return rewritten, None, context


def _run_after_hooks(info: CallInfo, result: ToolResult) -> ToolResult:
    for impl in info.session.toolbox.hook.pegboard_after_call.get_hookimpls():
        try:
            replaced = impl.function(*[{"call": info, "result": result}[a] for a in impl.argnames])
        except Exception as exc:
            return result.with_text_appended(f"(post-call hook of {impl.plugin_name!r} failed: {exc})")
        if isinstance(replaced, ToolResult):
            result = replaced
    return result


async def _execute(session: Session, tool: Tool, validated: Any, call_id: str, uncapped: bool) -> ToolResult:
    ctx = ToolContext(session=session, tool=tool, config=session.toolbox.plugin_config(tool.plugin),
                      call_id=call_id, uncapped=uncapped)
    timeout = tool.timeout_s or DEFAULT_TIMEOUT_S
    try:
        outcome = await asyncio.wait_for(tool.invoke(validated, ctx), timeout)
    except TimeoutError:
        return ToolResult.error(f"{tool.name} did not finish within {timeout:g} s and was stopped. "
                                "Try a smaller piece of work, or run it in the background.")
    except Exception as exc:
        return ToolResult.error(f"{tool.name} failed: {type(exc).__name__}: {exc}")
    if isinstance(outcome, str):
        return ToolResult.text(outcome)
    if isinstance(outcome, ToolResult):
        return outcome
    return ToolResult.error(f"{tool.name} returned {type(outcome).__name__}, not a result; "
                            "this is a bug in the plugin "
                            f"{tool.plugin!r}.")


def _shape(session: Session, tool: Tool, result: ToolResult, scratchpad: str | None, call_id: str) -> ToolResult:
    if scratchpad is not None and not result.is_error:
        text = result.text_content()
        session.scratchpad[scratchpad] = text
        others = [c for c in result.content if c.type != "text"]
        note = (f"Saved {len(text):,} characters of {tool.name} output to scratchpad entry {scratchpad!r}. "
                f"Read it with ScratchpadRead.")
        return ToolResult(content=[*others, *ToolResult.text(note).content])
    limit = session.toolbox.settings.core.results.max_chars
    text = result.text_content()
    if len(text) <= limit:
        return result
    folder = session.data_dir / "results"
    folder.mkdir(exist_ok=True)
    path = folder / f"{tool.name}-{call_id}.txt"
    path.write_text(text, encoding="utf-8")
    preview = text[:PREVIEW_CHARS]
    note = (f"\n\n[Output was {len(text):,} characters, over the {limit:,} limit. The whole text is saved in "
            f"{path}; use Read with offset and limit to see more.]")
    others = [c for c in result.content if c.type != "text"]
    return ToolResult(content=[*others, *ToolResult.text(preview + note).content],
                      structured_content=result.structured_content, is_error=result.is_error)


async def run_call(session: Session, name: str, arguments: Any, call_id: str) -> ToolResult:
    from ._session import CallInfo

    tool = session.toolbox.offered_tool(name, session)
    if tool is None:
        return ToolResult.error(session.toolbox.why_unavailable(name, session))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolResult.error(f"The arguments for {name} are not valid JSON ({exc}); nothing was run.")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return ToolResult.error(f"The arguments for {name} must be a JSON object; nothing was run.")
    args = dict(arguments)
    notes: list[str] = []
    try:
        background, scratchpad = _split_reserved(session, tool, args)
        validated, advisory = _validate(tool, args)
        if (note := _deferred_note(session, tool, args)) is not None:
            notes.append(note)
        if advisory:
            notes.append(advisory)
        if (refusal := await _authorize(session, tool, validated)) is not None:
            return ToolResult.error(refusal)
        info = CallInfo(session=session, tool=tool, input=_as_mapping(validated), call_id=call_id)
        rewritten, blocked, context = _run_before_hooks(info)
        if blocked is not None:
            return ToolResult.error(blocked)
        if rewritten is not None:
            # A rewritten input is a new call: validate and decide again.
            validated, _ = _validate(tool, rewritten)
            if (refusal := await _authorize(session, tool, validated)) is not None:
                return ToolResult.error(refusal)
        notes.extend(context)
    except _Refusal as refusal:
        return refusal.result
    uncapped = scratchpad is not None and tool.lifts_caps_with_scratchpad
    if background:
        async def work() -> ToolResult:
            result = _run_after_hooks(info, await _execute(session, tool, validated, call_id, uncapped))
            return _shape(session, tool, result, scratchpad, call_id)

        task_id = session.tasks.start(work(), kind="tool", description=f"{tool.name} call {call_id}")
        return ToolResult.text(f"Started {tool.name} in the background as {task_id}. Its result will be "
                               f"delivered when it finishes; TaskOutput fetches it, TaskList lists tasks.")
    result = await _execute(session, tool, validated, call_id, uncapped)
    result = _run_after_hooks(info, result)
    result = _shape(session, tool, result, scratchpad, call_id)
    for note in notes:
        result = result.with_text_appended(note)
    return result


async def run_batch(session: Session, calls: list[tuple[str, Any]]) -> list[ToolResult]:
    results: list[ToolResult | None] = [None] * len(calls)
    gate = asyncio.Semaphore(MAX_PARALLEL)

    def read_only(index: int) -> bool:
        tool = session.toolbox.offered_tool(calls[index][0], session)
        return tool is not None and tool.read_only

    async def one(index: int) -> None:
        async with gate:
            name, arguments = calls[index]
            results[index] = await session.call(name, arguments)

    index = 0
    while index < len(calls):
        if read_only(index):
            group = []
            while index < len(calls) and read_only(index):
                group.append(index)
                index += 1
            await asyncio.gather(*(one(i) for i in group))
        else:
            name, arguments = calls[index]
            results[index] = await session.call(name, arguments)
            index += 1
    return [r if r is not None else ToolResult.error("internal error: no result") for r in results]

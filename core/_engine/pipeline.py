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
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from .arguments import (
    parse_arguments,
    RESERVED_PARAMETERS,
    Refusal,
    as_mapping,
    describe_type,
    reserved_owned,
    show_value,
    split_reserved,
    tool_parameters,
    validate,
)
from .._api.decisions import Answer, Decision, PermissionRequest
from .._util.atomic import atomic_write
from .._api.calls import RESULTS_FOLDER, CallInfo, PreCall
from .._loading.hooks import call as call_hook
from .._util.path_facts import resolve_path
from .._util.errors import report_failure, short_error
from .._loading.scope import ignored_note
from .._api.tools import TextContent, Tool, ToolContext, ToolResult
from .tracing import (FRAMEWORK_SPAN, OUTCOME, decision_span, record_decision, record_result, span,
                       tool_attributes, tracer as _tracer)

if TYPE_CHECKING:
    from .session import Session

__all__ = ["MAX_PARALLEL", "MAX_PARALLEL_CHEAP", "RESERVED_PARAMETERS", "BatchCall", "run_batch", "run_call",
           "tool_parameters"]

DEFAULT_TIMEOUT_S = 600.0
MAX_PARALLEL = 10
PREVIEW_CHARS = 2_000
SCRATCHPAD_MAX_CHARS = 20_000_000  # all entries of one session together (held in memory)

# One call of a batch: (name, arguments) or (name, arguments, call_id).
BatchCall = tuple[str, Any] | tuple[str, Any, str]


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
        default = f", default {show_value(prop['default'])}" if "default" in prop else ", no default"
        desc = f": {prop['description']}" if prop.get("description") else ""
        lines.append(f"- {name} ({describe_type(prop) or 'any'}{default}){desc}")
    return "\n".join(lines)


# --- permission and hooks --------------------------------------------------------


async def _authorize(session: Session, tool: Tool, input: Mapping[str, Any], call_id: str,
                     approval: Answer | None = None) -> PermissionRequest:
    # The call id lets a plugin tie what its vote checked to the call that runs.
    # (by position, in the order of its fields: keywords cost its __init__ as much as its work)
    request = PermissionRequest(tool, input, session, session.policy, {"call_id": call_id})
    tracer = _tracer()
    decision = await (_decide(session, request, approval) if tracer is None
                      else _traced_decision(tracer, session, request, approval))
    if decision.decision == "ask":
        _note_outcome("pending")
        raise _Held(decision)  # the host will answer later: the call becomes a pending call
    if decision.decision != "allow":
        _note_outcome("denied")
        raise Refusal(f"Permission denied for {tool.name}: {decision.reason} (decided by {decision.source}).")
    return request


async def _decide(session: Session, request: PermissionRequest, approval: Answer | None) -> Decision:
    permissions = session.toolbox.permissions
    if approval is not None:
        return await permissions.authorize(request, approval)
    if session.toolbox.hooks.implemented("pegboard_ask"):
        # With a person to ask, the calls of a session decide one at a time,
        # in call order: the person sees one question at a time, and an
        # "always allow" answer already counts for the calls queued behind it.
        # A decision that asks no one holds the lock without awaiting.
        async with session.ask_lock:
            return await permissions.authorize(request)
    return await permissions.authorize(request)


async def _traced_decision(tracer: Any, session: Session, request: PermissionRequest,
                           approval: Answer | None) -> Decision:
    """``_decide`` in a ``permission {tool}`` span; the decision goes on it and on the call's span."""
    from opentelemetry.trace import get_current_span

    call_span = get_current_span()
    with decision_span(tracer, request.tool.name, request.extra.get("call_id")) as current:
        decision = await _decide(session, request, approval)
        record_decision(current, decision)
    record_decision(call_span, decision)
    return decision


class _Held(Refusal):
    """The host answered ``Answer.later()``. Where the call can be kept
    (its first decision) it becomes a pending call; after a pre-call hook
    rewrote it, it is refused like any unanswered ask."""

    def __init__(self, decision: Decision):
        super().__init__(f"Permission denied: {decision.reason}; it needs a person's approval, and a "
                         "pre-call hook changed the call after it was asked about.")
        self.decision = decision


async def _call_hook(impl: Any, kwargs: Mapping[str, Any]) -> Any:
    """Call one hook implementation; a host may implement pipeline hooks as coroutines."""
    outcome = call_hook(impl, kwargs)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


async def _run_before_hooks(info: CallInfo, impls: list[Any]) -> tuple[bool, list[str]]:
    """Run every pre-call hook in order; each sees the input as the ones before
    it left it. Returns (rewritten?, context texts). A hook that fails or
    answers nonsense blocks the call: such hooks are often guards, and a
    broken guard must not wave calls through."""
    rewritten, context = False, []
    for impl in impls:
        try:
            verdict = await _call_hook(impl, {"call": info})
        except Exception as exc:
            raise Refusal(f"{info.tool.name} was blocked: the pre-call hook of {impl.plugin_name!r} failed "
                           f"({short_error(exc)}); nothing was run.") from None
        if verdict is None:
            continue
        if not isinstance(verdict, PreCall):
            raise Refusal(f"{info.tool.name} was blocked: the pre-call hook of {impl.plugin_name!r} returned "
                           f"{type(verdict).__name__}, not PreCall; nothing was run.")
        if verdict.block is not None:
            raise Refusal(verdict.block or f"{info.tool.name} was blocked by {impl.plugin_name!r}.")
        if verdict.input is not None:
            info.input = dict(verdict.input)
            rewritten = True
        if verdict.context:
            context.append(verdict.context)
    return rewritten, context


async def _run_after_hooks(info: CallInfo, result: ToolResult, impls: list[Any]) -> ToolResult:
    """Each post-call hook sees the result as the ones before it left it. A
    failing hook cannot undo the call that already ran, so its failure is
    reported on the result and the remaining hooks still run."""
    for impl in impls:
        try:
            replaced = await _call_hook(impl, {"call": info, "result": result})
        except Exception as exc:
            result = result.with_text_appended(f"(post-call hook of {impl.plugin_name!r} failed: "
                                               f"{short_error(exc)})")
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
# The last loop asked about (weakly) and its watchdog: nearly every call
# runs on the loop the one before it ran on, and WeakKeyDictionary.get is a
# Python-level call that makes a weak reference each time.
_last_watchdog: list[Any] = [None, None]


def _watchdog(loop: asyncio.AbstractEventLoop) -> _Watchdog:
    ref, dog = _last_watchdog
    if ref is not None and ref() is loop:
        return dog
    dog = _watchdogs.get(loop)
    if dog is None:
        dog = _watchdogs[loop] = _Watchdog()
    _last_watchdog[:] = [weakref.ref(loop), dog]
    return dog


async def _execute(session: Session, tool: Tool, validated: Any, call_id: str, uncapped: bool,
                   request: PermissionRequest, timeout_s: float | None = None) -> ToolResult:
    tracer = _tracer()
    if tracer is not None:
        with span(tracer, f"run {tool.name}", {"gen_ai.tool.name": tool.name, "gen_ai.tool.call.id": call_id}):
            return await _run_handler(session, tool, validated, call_id, uncapped, request, timeout_s)
    return await _run_handler(session, tool, validated, call_id, uncapped, request, timeout_s)


async def _run_handler(session: Session, tool: Tool, validated: Any, call_id: str, uncapped: bool,
                       request: PermissionRequest, timeout_s: float | None) -> ToolResult:
    # (by position: keywords cost a dataclass __init__ of seven fields as much as its work)
    context, config = session.toolbox.handler_parts[tool.plugin]
    ctx = ToolContext(session, tool, context, config, call_id, uncapped, request._resolved)
    timeout = tool.timeout_s or DEFAULT_TIMEOUT_S
    if timeout_s is not None and timeout_s < timeout:
        timeout = timeout_s  # the caller's limit for this call, never longer than the tool's own
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    assert task is not None  # run_call is always awaited inside a task
    cancelling = task.cancelling()
    ref, dog = _last_watchdog  # (_watchdog's common case, without its call)
    if ref is None or ref() is not loop:
        dog = _watchdog(loop)
    token = dog.add(loop, timeout, task)
    expired = False
    try:
        try:
            # a coroutine handler directly (Tool.invoke would add a coroutine of its own)
            outcome = await (tool.function(validated, ctx) if tool._awaited  # type: ignore[misc]
                             else tool.invoke(validated, ctx))
        finally:
            # Whatever left (KeyboardInterrupt too), the watchdog must not keep a
            # task it could cancel later in the middle of something else.
            expired = dog.remove(token)
    except asyncio.CancelledError:
        # Ours only if the watchdog cancelled and nobody else did as well (as
        # asyncio.timeout decides); an outer cancellation passes through.
        if expired and task.uncancel() <= cancelling:
            _note_outcome("timeout")
            return ToolResult.error(f"{tool.name} did not finish within {timeout:g} s and was stopped. "
                                    "Try a smaller piece of work"
                                    + (", or run it in the background."
                                       if session.toolbox.settings.core.background.enabled else "."))
        if expired or task.cancelling() > cancelling:
            raise  # our caller is being cancelled: that is not the tool's failure
        return ToolResult.error(f"{tool.name} failed: it was cancelled from inside (CancelledError).")
    except (Exception, SystemExit) as exc:  # SystemExit too: a tool calling sys.exit must not end the agent
        if expired:
            task.uncancel()  # the deadline passed as it failed: the failure is the news
        return ToolResult.error(f"{tool.name} failed: {type(exc).__name__}: {exc}")
    if expired:
        # The deadline passed just as the tool returned (or it swallowed
        # the cancellation): take back the cancel, keep the result.
        task.uncancel()
    if isinstance(outcome, ToolResult):
        return outcome
    if isinstance(outcome, str):
        # (not model_construct: its Python loop over the fields costs twice this validation)
        return ToolResult.text(outcome)
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


def _spill(data_dir: Path, tool: Tool, text: str, call_id: str) -> Path:
    folder = data_dir / RESULTS_FOLDER
    folder.mkdir(exist_ok=True)
    path = folder / f"{_UNSAFE.sub('_', tool.name)}-{_UNSAFE.sub('_', call_id)}.txt"
    # whole or not at all: the model is told to read this file in parts
    atomic_write(resolve_path(path, folder), text, default_mode=0o600)
    return path


def _shape(session: Session, tool: Tool, result: ToolResult, scratchpad: str | None, call_id: str) -> ToolResult:
    """Redirect to the scratchpad, or spill text over the limit to a file."""
    if scratchpad is not None:
        if result.is_error:
            # An error is what the model most needs to see; keep it inline.
            return result.with_text_appended(f"(Nothing was saved to scratchpad entry {scratchpad!r}.)")
        text = result.text_content()
        held = sum(len(v) for k, v in session.scratchpad.items() if k != scratchpad)
        if held + len(text) > SCRATCHPAD_MAX_CHARS:
            # The scratchpad lives in memory: past its limit the output takes
            # the ordinary way (inline, or saved to a file when long).
            shaped = _shape(session, tool, result, None, call_id)
            return shaped.with_text_appended(
                f"(Not saved to scratchpad entry {scratchpad!r}: with it the scratchpad would hold "
                f"{held + len(text):,} characters, over its {SCRATCHPAD_MAX_CHARS:,} limit. Saving again "
                "under an existing entry's name replaces that entry.)")
        replaced = scratchpad in session.scratchpad
        session.scratchpad[scratchpad] = text
        others = [c for c in result.content if not isinstance(c, TextContent)]
        note = (f"Saved {len(text):,} characters of {tool.name} output to scratchpad entry {scratchpad!r}"
                f"{' (replacing the old entry)' if replaced else ''}. Read it with ScratchpadRead.")
        # structured_content goes too: it is the same output in another form,
        # and keeping it out of the conversation is the point.
        return ToolResult(content=[*others, TextContent(text=note)])
    limit = session.toolbox.settings.core.results.max_chars
    size = 0
    for part in result.content:  # cheap check first, with no list made: most results are small
        if isinstance(part, TextContent):
            size += len(part.text)
    if size <= limit:
        return result
    text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    try:
        where = f"The whole text is saved in {_spill(session.data_dir, tool, text, call_id)}; read it in parts with " \
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


async def run_call(session: Session, name: str, arguments: Any, call_id: str,
                   approval: Answer | None = None, timeout_s: float | None = None) -> ToolResult:
    """One call, start to finish. Never raises for anything a tool, a hook or
    the arguments did; the caller's own cancellation passes through."""
    tracer = _tracer()
    if tracer is not None:
        return await _traced_call(tracer, session, name, arguments, call_id, approval, timeout_s)
    return await _call(session, name, arguments, call_id, approval, timeout_s)


async def _traced_call(tracer: Any, session: Session, name: str, arguments: Any, call_id: str,
                       approval: Answer | None, timeout_s: float | None) -> ToolResult:
    """``_call`` in an ``execute_tool {name}`` span (or, inside a framework's
    own span for this call, on that span: see ``_tracing.framework_span``)."""

    attributes = tool_attributes(name, call_id)
    attributes["pegboard.session.id"] = session.id
    outcome: list[str | None] = [None]
    token = OUTCOME.set(outcome)
    try:
        framework = FRAMEWORK_SPAN.get()
        if framework is not None:
            framework.set_attributes(attributes)
            result = await _call(session, name, arguments, call_id, approval, timeout_s)
            record_result(framework, result, outcome[0])
            return result
        with span(tracer, f"execute_tool {name}", attributes) as current:
            result = await _call(session, name, arguments, call_id, approval, timeout_s)
            record_result(current, result, outcome[0])
        return result
    finally:
        OUTCOME.reset(token)


def _note_outcome(kind: str) -> None:
    """Why a traced call failed (``error.type``); called on the failing paths only."""
    if _tracer() is None:
        return

    holder = OUTCOME.get()
    if holder is not None and holder[0] is None:
        holder[0] = kind


async def _call(session: Session, name: str, arguments: Any, call_id: str, approval: Answer | None,
                timeout_s: float | None) -> ToolResult:
    try:
        result = await _run_call(session, name, arguments, call_id, approval, timeout_s)
    except Refusal as refusal:
        result = refusal.result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a bug in the pipeline or a plugin hook: still only this call fails
        # The detail is for the operator; the model can act only on what happened to its call.
        report_failure(f"the {name} call {call_id!r}", exc)
        result = ToolResult.error(f"{name} could not be completed: pegboard failed while handling this call, a "
                                  "fault on its side and not in your arguments. Other calls are not affected. Check "
                                  "whether the call had its effect before trying it again; if it fails again, do "
                                  f"without {name}.")
    settings = session.toolbox.settings
    if settings.ignored and session.note_once("core:ignored-config"):
        # Once, on the first result whatever it is: a call refused because
        # the project's allow rule was ignored is where the model needs it.
        result = _append_notes(result, [ignored_note(settings)])
    return result


async def _run_call(session: Session, name: str, arguments: Any, call_id: str,
                    approval: Answer | None, timeout_s: float | None) -> ToolResult:
    if session.closed:
        return ToolResult.error(f"{name} was not run: this session is closed.")
    toolbox = session.toolbox
    tool = session._offered_tool(name)
    if tool is None:
        return ToolResult.error(toolbox.why_unavailable(name, session))
    args = parse_arguments(name, arguments)
    notes: list[str] = []
    background, scratchpad = split_reserved(toolbox.settings.core.background.enabled, tool, args)
    validated, advisory = validate(tool, args)
    if advisory:
        notes.append(advisory)
    mapping = as_mapping(validated)
    try:
        request = await _authorize(session, tool, mapping, call_id, approval)
    except _Held as held:
        # Kept as the model sent it (pegboard's own parameters too), to run as it was when approved.
        waiting = session.pending.hold(tool.name, parse_arguments(name, arguments), call_id, held.decision)
        return _append_notes(ToolResult.error(waiting.message()), notes)
    # What the hooks see, made only when a hook will see it (most calls have none)
    befores = toolbox.hooks.implementations("pegboard_before_call")
    info = CallInfo(session=session, tool=tool, input=mapping, call_id=call_id) if befores else None
    rewritten, context = await _run_before_hooks(info, befores) if info is not None else (False, [])
    if rewritten:
        assert info is not None
        # A rewritten input is a new call: validate it and decide again, so a
        # hook cannot smuggle a call past the permission rules.
        validated, _ = validate(tool, info.input, rewritten=True)
        info.input = as_mapping(validated)
        request = await _authorize(session, tool, info.input, call_id)
    notes.extend(context)
    # Only now, when the call will run: a refused call must not use up the
    # once-per-session note before the model could see it.
    if tool.loading == "deferred" and (note := _deferred_note(session, tool, args)) is not None:
        notes.insert(0, note)
    uncapped = scratchpad is not None and tool.lifts_caps_with_scratchpad
    if background:
        seen = info if info is not None else CallInfo(session=session, tool=tool, input=mapping, call_id=call_id)

        async def work() -> ToolResult:
            outcome = await _execute(session, tool, validated, call_id, uncapped, request, timeout_s)
            afters = session.toolbox.hooks.implementations("pegboard_after_call")
            result = await _run_after_hooks(seen, outcome, afters) if afters else outcome
            return _shape(session, tool, result, scratchpad, call_id)

        task_id = session.tasks.start(work(), kind="tool", description=f"{tool.name} (call {call_id})")
        started = ToolResult.text(f"Started {tool.name} in the background as {task_id}. Its result will be "
                                  "delivered when it finishes; TaskOutput fetches it (without a task_id it lists "
                                  "tasks), TaskStop stops it.")
        return _append_notes(started, notes)
    result = await _execute(session, tool, validated, call_id, uncapped, request, timeout_s)
    # (hooks looked up now, not before the call: a hook registered while the call ran counts)
    afters = toolbox.hooks.implementations("pegboard_after_call")
    if afters:
        if info is None:
            info = CallInfo(session=session, tool=tool, input=mapping, call_id=call_id)
        result = await _run_after_hooks(info, result, afters)
    result = _shape(session, tool, result, scratchpad, call_id)
    return _append_notes(result, notes) if notes else result


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
    steps: list[tuple[list[int], bool]] = []
    group: list[int] = []
    saves = False
    # per tool name (a batch names few tools, often one many times): whether
    # its call runs alone, and whether it may save to the scratchpad
    seen: dict[str, tuple[bool, Tool | None]] = {}
    for index, call in enumerate(calls):
        name = call[0]
        found = seen.get(name)
        if found is None:
            tool = session._offered_tool(name)
            # A call of a tool that is not offered only produces an error and
            # changes nothing, so it need not split a group of reads.
            alone = tool is not None and not tool.read_only
            found = seen[name] = (alone, tool if tool is not None and reserved_owned(tool)[1] else None)
        alone, saver = found
        if alone:
            if group:
                steps.append((group, True))
                group, saves = [], False
            steps.append(([index], False))
            continue
        if saves and name in SCRATCHPAD_READERS:
            steps.append((group, True))
            group, saves = [], False
        group.append(index)
        if saver is not None and not saves:
            arguments = call[1]
            # (a dict's own look-up without the call: this runs for every call of a batch)
            saves = arguments.get("scratchpad") is not None if type(arguments) is dict \
                else _saves_to_scratchpad(saver, arguments)
    if group:
        steps.append((group, True))
    return steps


def _saves_to_scratchpad(tool: Tool, arguments: Any) -> bool:
    if not reserved_owned(tool)[1]:
        return False
    if type(arguments) is dict:  # the common case, before the ABC check (a Python-level isinstance)
        return arguments.get("scratchpad") is not None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return False
    return isinstance(arguments, Mapping) and arguments.get("scratchpad") is not None


# How many calls of a batch run at once. Ten for calls that take real time
# (commands, fetches, MCP calls): each holds a process, a socket or a thread
# while it runs, ten of those is what a small machine and a remote server
# take without strain, and it is the concurrency Claude Code-class agents
# use. Calls that finish at once hold nothing for long: a group made only of
# tools whose last CHEAP_STREAK calls in this session each finished within
# CHEAP_S runs up to MAX_PARALLEL_CHEAP at once (under anyio's default of 40
# worker threads, so cheap calls that use a thread do not queue inside it).
MAX_PARALLEL_CHEAP = 32
CHEAP_S = 0.02
CHEAP_STREAK = 3
_cheap_streaks: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()


def _parallel_limit(session: Session, calls: Sequence[BatchCall], indices: Sequence[int]) -> int:
    streaks = _cheap_streaks.get(session, {})
    names = {calls[i][0] for i in indices}
    cheap = all(streaks.get(name, 0) >= CHEAP_STREAK for name in names)
    return MAX_PARALLEL_CHEAP if cheap else MAX_PARALLEL


async def run_batch(session: Session, calls: Sequence[BatchCall]) -> list[ToolResult]:
    """The calls of one model reply, results in call order.

    Consecutive read-only calls form a group and run side by side, at most
    ``MAX_PARALLEL`` at once, or ``MAX_PARALLEL_CHEAP`` when every tool of the
    group has proved cheap in this session (see above). The group runs on
    that many workers, each taking the next call as soon as its own ends, so
    one slow read holds up nobody in its group, and cheap calls that never
    wait cost no more than running them one after another (no task per call).
    Every other call runs alone, in order: it waits for every call before it,
    and every call after it waits for it. So a slow read before a write delays
    the write and the reads after it; that is the point, since those reads may
    depend on what the write did.
    """
    results: list[ToolResult | None] = [None] * len(calls)
    streaks = _cheap_streaks.get(session)
    if streaks is None:
        streaks = _cheap_streaks[session] = {}

    async def one(index: int) -> None:
        call = calls[index]
        call_id = call[2] if len(call) > 2 else session.next_call_id()
        # (the clock loop.time reads, without its Python frame: only a duration is wanted)
        started = monotonic()
        results[index] = await run_call(session, call[0], call[1], call_id)
        streaks[call[0]] = streaks.get(call[0], 0) + 1 if monotonic() - started <= CHEAP_S else 0

    loop = asyncio.get_running_loop()
    for indices, side_by_side in _plan(session, calls):
        if side_by_side and len(indices) > 1:
            await _side_by_side(loop, session, calls, results, streaks, indices,
                                _parallel_limit(session, calls, indices))
        else:
            await one(indices[0])
    return [r if r is not None else ToolResult.error("internal error: this call produced no result")
            for r in results]


async def _side_by_side(loop: asyncio.AbstractEventLoop, session: Session, calls: Sequence[BatchCall],
                        results: list[ToolResult | None], streaks: dict[str, int], indices: Sequence[int],
                        limit: int) -> None:
    """Run the calls at ``indices`` (as ``run_batch``'s ``one`` runs a call),
    at most ``limit`` at once, their results into ``results``.

    This task is the first worker. Another is started only once a call has
    waited (a callback scheduled before the call runs when this task yields),
    so calls that never wait run back to back, with no task of their own;
    and with no coroutine of their own around run_call's, which made a
    batch of small Reads cost more than the same calls one after another.
    """
    queue = deque(indices)
    helpers: list[asyncio.Task[None]] = []
    scheduled = False

    def add_worker() -> None:
        nonlocal scheduled
        scheduled = False
        if queue and len(helpers) + 1 < limit:
            helpers.append(loop.create_task(worker()))

    async def worker() -> None:
        nonlocal scheduled
        started = monotonic()
        while queue:
            index = queue.popleft()
            if queue and not scheduled and len(helpers) + 1 < limit:
                scheduled = True
                loop.call_soon(add_worker)
            call = calls[index]
            call_id = call[2] if len(call) > 2 else session.next_call_id()
            results[index] = await run_call(session, call[0], call[1], call_id)
            # one clock read a call: where one call ends, this worker's next one starts
            ended = monotonic()
            streaks[call[0]] = streaks.get(call[0], 0) + 1 if ended - started <= CHEAP_S else 0
            started = ended

    try:
        await worker()
        while helpers and not all(h.done() for h in helpers):
            await asyncio.gather(*helpers)  # a helper may have started another meanwhile
    except BaseException:
        queue.clear()
        for helper in helpers:
            helper.cancel()
        raise

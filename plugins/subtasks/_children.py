"""A session's children: making one under its terms, running it, following up.

Authority only narrows. A child's session is made with ``Session.child``
(policy clamped to the parent's, tools hidden, working directories within
the parent's), and the terms it was spawned under are recorded: a follow-up
makes the child's session again from them (clamped to the caller as it is
now, which can only narrow them further), never from the caller's current
settings.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult

from ._records import AgentRecord, MemoryRecords, Records, StoreRecords, Terms
from ._run import SubagentRun, last_text, repair

if TYPE_CHECKING:
    from pegboard import Session, ToolContext

    from ._config import SubtasksConfig

__all__ = ["AGENT_TOOL", "Family", "RunnerError", "drain_inbox", "family", "mark_driven", "new_agent_id",
           "note_event", "records_for", "run_of", "start_run", "terms_of"]

AGENT_TOOL = "Agent"
PLUGIN = "subtasks"
CHILD_OUTPUT_SCHEMA = "child_output_schema"
"""Key of the parent's plugin state (``pegboard agent run --json-schema``): the answer
schema its next children are made with, so they are offered StructuredOutput."""
RESUMED_NOTE = ("(This conversation continues in a new session: which files you had read, so Edit and Write "
                "need a fresh Read first, and any task list you kept were not carried over.)")


class RunnerError(Exception):
    """The child could not be run; the message says why, for the caller."""


@dataclass
class Live:
    """A child whose session exists in this process."""

    session: Session
    task_id: str | None = None
    run: SubagentRun | None = None


@dataclass
class Family:
    """What this process knows of one parent session's children."""

    live: dict[str, Live] = field(default_factory=dict)
    memory: MemoryRecords = field(default_factory=MemoryRecords)


# Keyed by the session objects themselves, so hooks that are handed only a
# session (closing, events) find what belongs to it; gone with the session.
_families: weakref.WeakKeyDictionary[Session, Family] = weakref.WeakKeyDictionary()
_unanswered: weakref.WeakKeyDictionary[Session, list[dict[str, Any]]] = weakref.WeakKeyDictionary()
_terms: weakref.WeakKeyDictionary[Session, Terms] = weakref.WeakKeyDictionary()


def family(session: Session) -> Family:
    found = _families.get(session)
    if found is None:
        found = _families[session] = Family()
    return found


def terms_of(session: Session) -> Terms | None:
    """The terms ``session`` runs under, when it is a sub-agent's."""
    return _terms.get(session)


def note_unanswered(session: Session, data: dict[str, Any]) -> None:
    found = _unanswered.get(session)
    if found is not None:
        found.append(dict(data))


def records_for(ctx: ToolContext) -> Records:
    """The store for a durable session's children, memory for the others'."""
    if ctx.session.durable:
        return StoreRecords(ctx.store)
    return family(ctx.session).memory


def new_agent_id() -> str:
    return f"agent-{secrets.token_hex(5)}"


def make_session(parent: Session, agent_id: str, terms: Terms) -> Session:
    """The child's session from its terms (resumed from the store when the
    parent is durable). ``ValueError`` when the terms no longer fit the
    parent (a working directory gone)."""
    wanted = parent.plugin_state(PLUGIN).get(CHILD_OUTPUT_SCHEMA)
    only = terms.only
    if wanted is not None and only is not None:
        only = (*only, "StructuredOutput")  # an agent type's own tool list must not hide the answer's tool
    child = parent.child(mode=terms.mode, hide=terms.hide, only=only,
                         working_dirs=list(terms.working_dirs) or None, label=f"{terms.label} ({agent_id})",
                         session_id=agent_id, copies=worktree_copies(terms.worktree),
                         access=terms.access)
    _terms[child] = terms
    if wanted is not None:
        child.output_schema = wanted
    return child


def worktree_copies(tree: dict[str, str] | None) -> dict[str, str]:
    """A worktree copies its repository's checkout: the parent's deny and ask
    rules (``Read(./secrets/**)``, anchored at the project root) must hold for
    the same files in the child's worktree (``Session.child``'s ``copies``)."""
    if not tree:
        return {}
    inside = Path(os.path.relpath(tree["workdir"], tree["path"]))
    top = Path(tree["repo"])
    for _ in inside.parts if str(inside) != "." else ():
        top = top.parent
    return {tree["path"]: str(top)}


def host_listens(ctx: ToolContext) -> bool:
    """Whether someone hears a background report when it arrives: a host's
    ``pegboard_event`` (not a plugin's), or a reference runner driving the session."""
    if ctx.session in _driven:
        return True
    # Asked of the core, which knows what registered as a host: a plugin given as
    # an object is no host, and a host given as a module is one.
    return ctx.plugin_context.host_implements("pegboard_event")


# Sessions a reference runner drives (their background reports reach the model).
_driven: weakref.WeakSet[Session] = weakref.WeakSet()


def mark_driven(session: Session) -> None:
    _driven.add(session)


# What a driven session's model has not heard yet: its background work that ended.
_inbox: weakref.WeakKeyDictionary[Session, list[str]] = weakref.WeakKeyDictionary()


def note_event(session: Session, kind: str, data: dict[str, Any]) -> None:
    if kind == "permission.unanswered":
        note_unanswered(session, data)
    elif kind == "background.done" and session in _driven:
        result = data.get("result")
        text = result.text_content() if isinstance(result, ToolResult) else ("" if result is None else str(result))
        error = f" ({data['error']})" if data.get("error") else ""
        _inbox.setdefault(session, []).append(
            f"Background task {data.get('id')} ({data.get('description')}) ended: {data.get('status')}{error}."
            + (f"\n{text}" if text else ""))


def drain_inbox(session: Session) -> list[str]:
    return _inbox.pop(session, [])


# --- running -----------------------------------------------------------------------


async def drive(run: SubagentRun, config: SubtasksConfig, hook: Any) -> str:
    """The host's ``pegboard_run_subagent`` if it answers, else the configured reference runner."""
    caller = getattr(hook, "pegboard_run_subagent", None)
    for impl in reversed(caller.get_hookimpls() if caller is not None else []):
        outcome = impl.function(*[{"run": run}[a] for a in impl.argnames])
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome is None:
            continue
        if not isinstance(outcome, str):
            raise RunnerError(f"the host's pegboard_run_subagent ({impl.plugin_name}) returned "
                              f"{type(outcome).__name__}, not the report as a string")
        return outcome
    if config.runner is None:
        raise RunnerError("no model runs sub-agents here: the host implements no pegboard_run_subagent hook, "
                          "and [plugins.subtasks] runner is not set (\"anthropic\" or \"openai\", in your user "
                          "config)")
    from ._runner import run_reference

    return await run_reference(run, config)


async def _until_handback(run: SubagentRun, driving: Any) -> str:
    """The run's report: what its loop returns, or what the child handed in
    with SubagentHandback, which ends the loop (a host's loop is stopped
    when it carries on after the call)."""
    loop = asyncio.ensure_future(driving)
    handed = asyncio.ensure_future(run.handed_back.wait())
    try:
        await asyncio.wait({loop, handed}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        loop.cancel()
        handed.cancel()
        raise
    handed.cancel()
    if loop.done():
        report = loop.result()
        return run.handback if run.handback is not None else report
    loop.cancel()
    try:
        await loop
    except asyncio.CancelledError:
        pass
    except Exception:  # noqa: S110  (the loop failed on its way out, after the report was handed in)
        pass
    return run.handback or ""


def run_of(session: Session) -> SubagentRun | None:
    """The run ``session`` (a sub-agent's) is in now, if one runs in this process."""
    parent = session.parent
    if parent is None:
        return None
    for live in family(parent).live.values():
        if live.session is session and live.run is not None:
            return live.run
    return None


@dataclass
class Prepared:
    """Everything one run needs, gathered by the tool that starts it."""

    ctx: ToolContext
    records: Records
    record: AgentRecord
    token: str
    child: Session
    prompt: str
    follow_up: bool
    notes: list[str] = field(default_factory=list)


async def start_run(prep: Prepared, background: bool, headline: Callable[[str], str]) -> ToolResult:
    """Run the child now, or start it as a background task of the parent."""
    ctx = prep.ctx
    live = family(ctx.session).live.setdefault(prep.record.id, Live(prep.child))
    live.session = prep.child
    cancelled = asyncio.Event()
    if not background:
        return await _run(prep, live, cancelled)

    def stop() -> None:
        cancelled.set()

    task_id = ctx.session.tasks.start(_run(prep, live, cancelled), kind="agent",
                                      description=f"{prep.record.terms.agent_type}: {prep.record.terms.label} "
                                                  f"({prep.record.id})", on_stop=stop)
    live.task_id = task_id
    return ToolResult.text(f"{prep.record.id}\n{headline(task_id)}")


async def _run(prep: Prepared, live: Live, cancelled: asyncio.Event) -> ToolResult:
    ctx, record, terms = prep.ctx, prep.record, prep.record.terms
    config: SubtasksConfig = ctx.config
    messages = repair(await prep.records.messages(record.id)) if prep.follow_up else []
    run = SubagentRun(session=prep.child, agent_id=record.id, agent_type=terms.agent_type, description=terms.label,
                      system_prompt=terms.system_prompt, prompt=prep.prompt, model=terms.model,
                      max_turns=terms.max_turns, messages=messages, cancelled=cancelled, follow_up=prep.follow_up)
    saved = len(messages)

    async def save(current: SubagentRun) -> None:
        nonlocal saved
        saved = await prep.records.save_messages(record.id, current.messages, saved)

    run._saver = save
    live.run = run
    unanswered = _unanswered.setdefault(prep.child, [])
    start = len(unanswered)
    state, report, failed = "idle", "", False
    try:
        if terms.worktree:
            from ._worktree import reopen_worktree

            await reopen_worktree(terms.worktree)
        report = await _until_handback(run, drive(run, config, ctx.plugin_context.hook))
    except asyncio.CancelledError:
        cancelled.set()
        state, report = "stopped", last_text(run.messages)
        raise
    except Exception as exc:  # the child's failure is the caller's news, not a crash of the caller
        from ._worktree import WorktreeError

        state, failed = "failed", True
        report = str(exc) if isinstance(exc, (RunnerError, WorktreeError)) else f"{type(exc).__name__}: {exc}"
    finally:
        live.run = None
        live.task_id = None
        notes = list(prep.notes)
        try:
            await save(run)
        except Exception as exc:  # the report still reaches the caller
            notes.append(f"(Its conversation could not be saved: {type(exc).__name__}: {exc}; a follow-up "
                         "starts from what was saved before.)")
        if terms.worktree:
            from ._worktree import finish_worktree

            try:
                if kept := await finish_worktree(terms.worktree):
                    notes.append(kept)
            except Exception as exc:
                notes.append(f"(Its worktree could not be checked: {exc}.)")
        await prep.records.finish(record.id, prep.token, state=state, turns=record.turns + 1, report=report)
    denied = unanswered[start:]
    if denied:
        listed = "; ".join(f"{d['tool']}: {d['reason']}" for d in denied[:5])
        more = f" (and {len(denied) - 5} more)" if len(denied) > 5 else ""
        notes.append(f"{len(denied)} of its calls needed a person's approval and nobody could give it, so they "
                     f"were denied: {listed}{more}")
    if run.exhausted and not failed:
        notes.append(f"It stopped after {run.max_turns} model turns (its max_turns) before it had finished; "
                     f"SendMessage to {record.id} lets it go on.")
    if failed:
        text = f"{record.id}\nThe agent could not run: {report}"
    else:
        text = f"{record.id}\n{report.strip() or '(The agent ended without a report.)'}"
    if notes:
        text += "\n\n" + "\n".join(notes)
    return ToolResult.text(text, is_error=failed)


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(timestamp))

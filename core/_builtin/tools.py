"""The core's own tools: ToolSearch, the scratchpad, and background tasks.

They belong to the call pipeline rather than to any plugin, but they come
the way every plugin's tools come: ``CorePlugin`` is a plugin object the
plugin manager registers under the name ``core`` (``CORE_PLUGIN``), with the
hook a third party would implement (``pegboard_register_tools``) and a
tool's own vote (TaskStop's). It cannot be switched off (``[tools] block``
blocks its tools one by one), and its tools give way to a plugin's tool of
the same name (the shell plugin's TaskStop).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._api.decisions import PermissionRequest, Vote
from .._loading.descriptions import clip_summary
from .._api.hookspecs import hookimpl
from .._api.tools import CORE_PLUGIN, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from .._api.plugin_context import StoreSchema
    from .inputs import NoInput, ScratchpadReadInput, TaskOutputInput, TaskStopInput, ToolSearchInput
    from .._engine.session import Session

__all__ = ["CorePlugin", "core_tools"]

MAX_LOADED_PER_CALL = 10
# The tools' input models, imported when one is first validated or shown: a
# start-up that never calls these tools never defines them.
_INPUTS = "pegboard._builtin.inputs"


def _engine_session(ctx: ToolContext) -> Session:
    """The engine's session behind ``ctx.session``: the core's own tools
    work on what it keeps for the engine (the deferred tools loaded, the
    scratchpad, the toolbox), which no plugin is given."""
    return ctx.session  # type: ignore[return-value]  # the core's tools run only in its own sessions


async def tool_search(args: ToolSearchInput, ctx: ToolContext) -> ToolResult:
    session = _engine_session(ctx)
    toolbox = session.toolbox
    offered = session.offered()
    deferred = [t for t in offered if t.loading == "deferred"]
    by_name = {t.name: t for t in deferred}
    query = args.query.strip()
    remarks: list[str] = []
    if query.startswith("select:"):
        wanted = list(dict.fromkeys(n.strip() for n in query[len("select:"):].split(",") if n.strip()))
        # A wrong case is a typo, not a different tool: "select:notebookedit" loads NotebookEdit.
        folded = {t.name.lower(): t.name for t in offered}
        wanted = list(dict.fromkeys(n if n in by_name else folded.get(n.lower(), n) for n in wanted))
        always = {t.name for t in offered if t.loading == "always"}
        chosen = [by_name[n] for n in wanted if n in by_name]
        if len(chosen) > MAX_LOADED_PER_CALL:
            rest = [t.name for t in chosen[MAX_LOADED_PER_CALL:]]
            remarks.append(f"Not loaded, over {MAX_LOADED_PER_CALL} per call (ask again): {', '.join(rest)}")
            chosen = chosen[:MAX_LOADED_PER_CALL]
        if present := [n for n in wanted if n in always]:
            remarks.append(f"Already in the catalogue with their schemas: {', '.join(present)}")
        if unknown := [n for n in wanted if n not in by_name and n not in always]:
            remarks.append(f"No such deferred tool: {', '.join(unknown)}")
    else:
        words = query.lower().split()
        required = [w[1:] for w in words if w.startswith("+") and len(w) > 1]
        optional = [w for w in words if not w.startswith("+")]
        scored = []
        for tool in deferred:
            name = tool.name.lower()
            text = f"{name} {toolbox.description(tool).lower()}"
            if any(r not in text for r in required):
                continue
            # A hit in the name says more than one in the prose.
            score = sum(3 if w in name else 1 for w in optional if w in text) + len(required)
            if score:
                scored.append((-score, tool.name, tool))
        chosen = [t for _, _, t in sorted(scored)][: args.max_results]
    if not chosen:
        return ToolResult.error(f"No deferred tool matches {query!r}."
                                + "".join(f" {r}." for r in remarks)
                                + f" Deferred tools: {', '.join(sorted(by_name)) or 'none'}.")
    lines, added = [], []
    for tool in chosen:
        again = " (already loaded)" if tool.name in session.loaded else ""
        if not again:
            added.append(tool.name)
        session.loaded.add(tool.name)
        lines.append(f"- {tool.name}{again}: {clip_summary(toolbox.description(tool), 120)}")
    if added:
        session.emit("catalogue.changed", {"reason": "loaded", "tools": added})
    text = "Loaded (their schemas are in the catalogue from the next request on):\n" + "\n".join(lines)
    if remarks:
        text += "\n" + "\n".join(remarks)
    return ToolResult.text(text)


async def scratchpad_read(args: ScratchpadReadInput, ctx: ToolContext) -> ToolResult:
    pad = _engine_session(ctx).scratchpad
    if args.name not in pad:
        return ToolResult.error(f"No scratchpad entry {args.name!r}. Entries: {', '.join(sorted(pad)) or 'none'}.")
    text = pad[args.name]
    if args.offset and args.offset >= len(text):
        return ToolResult.error(f"offset {args.offset:,} is past the end of {args.name!r} "
                                f"({len(text):,} characters).")
    part = text[args.offset: args.offset + args.limit]
    end = args.offset + len(part)
    if end < len(text):
        part += f"\n[{len(text) - end:,} more characters; continue with offset={end}]"
    return ToolResult.text(part)


async def scratchpad_list(args: NoInput, ctx: ToolContext) -> ToolResult:
    pad = _engine_session(ctx).scratchpad
    if not pad:
        return ToolResult.text("The scratchpad is empty.")
    return ToolResult.text("\n".join(f"{name}\t{len(text):,} characters" for name, text in sorted(pad.items())))


def _listed_tasks(ctx: ToolContext) -> ToolResult:
    tasks = ctx.session.tasks.list()
    if not tasks:
        return ToolResult.text("No background tasks in this session.")
    return ToolResult.text("\n".join(
        f"{t.id}\t{t.status}\t{t.runtime_s:g} s\t{t.kind}\t{t.description}" for t in tasks))


async def task_list(args: NoInput, ctx: ToolContext) -> ToolResult:
    # Deprecated: the todos plugin's TaskList (a task list the model keeps)
    # takes this name when it is loaded; TaskOutput without a task_id lists
    # background tasks. Kept, giving way to that plugin, for one release.
    return _listed_tasks(ctx)


async def task_output(args: TaskOutputInput, ctx: ToolContext) -> ToolResult:
    if args.task_id is None:
        return _listed_tasks(ctx)
    task = ctx.session.tasks.get(args.task_id)
    if task is not None and args.wait_s:
        await ctx.session.tasks.wait(args.task_id, args.wait_s)
    if task is None:
        return ToolResult.error(f"No task {args.task_id!r} in this session; TaskOutput without a task_id "
                                "lists the tasks.")
    if task.status == "running":
        return ToolResult.text(f"{task.id} is still running ({task.description}, {task.runtime_s:g} s so far). "
                               "Call again later, or with wait_s to wait for it.")
    if task.status == "failed":
        return ToolResult.error(f"{task.id} failed: {task.error}")
    if isinstance(task.result, ToolResult):
        return task.result
    return ToolResult.text(f"{task.id} {task.status}." + (f"\n{task.result}" if task.result is not None else ""))


async def task_stop(args: TaskStopInput, ctx: ToolContext) -> ToolResult:
    task_id = args.task_id or args.shell_id
    if not task_id:
        return ToolResult.error("Give task_id.")
    if await ctx.session.tasks.stop(task_id):
        return ToolResult.text(f"Stopped {task_id}.")
    return ToolResult.error(f"No running task {task_id!r}; TaskOutput without a task_id lists the tasks.")


def core_tools() -> list[Tool]:
    """The core's tools, as ``CorePlugin`` registers them.

    Only ToolSearch is special: the toolbox offers it while some offered tool
    is deferred. The others are always loaded, on purpose: the scratchpad
    parameter is on every tool, so reading an entry back must not cost a
    ToolSearch round trip first; and were they deferred, ToolSearch would be
    offered in every session even when no plugin defers anything. Their
    schemas are a few lines each. The task tools are registered whatever
    [background] says because plugins start tasks of their own (the contract
    gives them session.tasks), and those need fetching and stopping too.
    """
    return [
        Tool(name="ToolSearch", handler=tool_search, input_model=f"{_INPUTS}:ToolSearchInput", read_only=True,
             permission="read", plugin=CORE_PLUGIN),
        Tool(name="ScratchpadRead", handler=scratchpad_read, input_model=f"{_INPUTS}:ScratchpadReadInput",
             read_only=True, permission="read", plugin=CORE_PLUGIN),
        Tool(name="ScratchpadList", handler=scratchpad_list, input_model=f"{_INPUTS}:NoInput", read_only=True,
             permission="read", plugin=CORE_PLUGIN),
        Tool(name="TaskList", handler=task_list, input_model=f"{_INPUTS}:NoInput", read_only=True,
             permission="read", plugin=CORE_PLUGIN),
        Tool(name="TaskOutput", handler=task_output, input_model=f"{_INPUTS}:TaskOutputInput", read_only=True,
             permission="read", plugin=CORE_PLUGIN),
        # Not read-only: stopping changes what is running, so it runs alone in a batch.
        Tool(name="TaskStop", handler=task_stop, input_model=f"{_INPUTS}:TaskStopInput",
             permission="read", plugin=CORE_PLUGIN, vote=_task_stop_vote),
    ]


def _task_stop_vote(request: PermissionRequest) -> Vote:
    # TaskStop is not read-only, but it only stops this session's own background
    # work, which the model started; asking a person about it would make the
    # model unable to take back its own call (the shell plugin's TaskStop is
    # allowed the same way). Deny rules still apply on top.
    return Vote.allow("TaskStop stops this session's own background task")


class CorePlugin:
    """The core's tools as a plugin, registered under ``CORE_PLUGIN``. The
    read-only tools need no vote (read-only tools run where reads run);
    TaskStop carries its own."""

    @hookimpl
    def pegboard_register_tools(self, register: Callable[[Tool], None]) -> None:
        for tool in core_tools():
            register(tool)

    @hookimpl
    def pegboard_store_schema(self) -> StoreSchema:
        # sessions, the scratchpad, the audit log, pending calls: under the
        # component name "pegboard" (CORE_COMPONENT), as databases record them
        from .._services.tables import core_schema

        return core_schema()

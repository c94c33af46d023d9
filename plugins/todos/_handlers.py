"""The task-list tools. Every result ends with the list as it now stands, so
the model never has to ask for it after a change."""

from __future__ import annotations

from typing import Any

from pegboard import TextContent, ToolContext, ToolResult

from ._lists import change_list, read_list
from ._models import TaskCreateInput, TaskGetInput, TaskListInput, TaskUpdateInput, TodoWriteInput

__all__ = ["task_create", "task_get", "task_list", "task_update", "todo_write"]


class _Refused(Exception):
    """A change the model asked for that cannot be made; its text is for the model."""


def _find(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    wanted = task_id.strip().lstrip("#")
    for task in doc["tasks"]:
        if task["id"] == wanted:
            return task
    known = ", ".join(f"#{t['id']}" for t in doc["tasks"]) or "none yet"
    raise _Refused(f"There is no task #{wanted} (tasks: {known}).")


def _open_blockers(doc: dict[str, Any], task: dict[str, Any]) -> list[str]:
    done = {t["id"] for t in doc["tasks"] if t["status"] == "completed"}
    return [b for b in task.get("blockedBy", []) if b not in done]


def listing(doc: dict[str, Any]) -> str:
    """The list as the model reads it: one line per task, its status and what holds it up."""
    tasks = doc["tasks"]
    if not tasks:
        return "The task list is empty."
    done = sum(1 for t in tasks if t["status"] == "completed")
    lines = [f"Task list ({done} of {len(tasks)} completed):"]
    for task in tasks:
        extra = f" (owner: {task['owner']})" if task.get("owner") else ""
        blockers = _open_blockers(doc, task)
        if blockers:
            extra += f" [blocked by {', '.join('#' + b for b in blockers)}]"
        lines.append(f"#{task['id']} [{task['status']}] {task['subject']}{extra}")
    return "\n".join(lines)


def _result(text: str, doc: dict[str, Any], *, with_listing: bool = True) -> ToolResult:
    body = f"{text}\n\n{listing(doc)}" if with_listing else text
    return ToolResult(content=[TextContent(text=body)], structured_content={"tasks": doc["tasks"]})


def _changed(ctx: ToolContext, doc: dict[str, Any]) -> None:
    ctx.emit("todos.changed", {"tasks": doc["tasks"], "todos": doc["todos"]})


async def task_create(args: TaskCreateInput, ctx: ToolContext) -> ToolResult:
    def create(doc: dict[str, Any]) -> dict[str, Any]:
        task: dict[str, Any] = {
            "id": str(doc["next_id"]), "subject": args.subject, "description": args.description,
            "activeForm": args.activeForm, "status": "pending", "owner": None, "blocks": [], "blockedBy": [],
            "metadata": dict(args.metadata or {})}
        doc["next_id"] += 1
        doc["tasks"].append(task)
        return task

    doc, task = await change_list(ctx, create)
    _changed(ctx, doc)
    return _result(f"Created task #{task['id']}: {task['subject']}", doc)


async def task_get(args: TaskGetInput, ctx: ToolContext) -> ToolResult:
    doc = await read_list(ctx)
    try:
        task = _find(doc, args.taskId)
    except _Refused as exc:
        return ToolResult.error(f"{exc} {listing(doc)}")
    lines = [f"#{task['id']} {task['subject']}", f"status: {task['status']}"]
    if task.get("activeForm"):
        lines.append(f"active form: {task['activeForm']}")
    if task.get("owner"):
        lines.append(f"owner: {task['owner']}")
    if task.get("blockedBy"):
        open_ones = set(_open_blockers(doc, task))
        lines.append("blocked by: " + ", ".join(f"#{b}{'' if b in open_ones else ' (completed)'}"
                                                for b in task["blockedBy"]))
    if task.get("blocks"):
        lines.append("blocks: " + ", ".join(f"#{b}" for b in task["blocks"]))
    if task.get("metadata"):
        lines.append(f"metadata: {task['metadata']}")
    lines.append(f"description:\n{task['description']}")
    return ToolResult(content=[TextContent(text="\n".join(lines))], structured_content={"task": task})


async def task_list(args: TaskListInput, ctx: ToolContext) -> ToolResult:
    doc = await read_list(ctx)
    return _result(listing(doc), doc, with_listing=False)


async def task_update(args: TaskUpdateInput, ctx: ToolContext) -> ToolResult:
    def update(doc: dict[str, Any]) -> str:
        task = _find(doc, args.taskId)
        tid = task["id"]
        if args.status == "deleted":
            doc["tasks"].remove(task)
            for other in doc["tasks"]:
                other["blocks"] = [b for b in other["blocks"] if b != tid]
                other["blockedBy"] = [b for b in other["blockedBy"] if b != tid]
            return f"Deleted task #{tid}: {task['subject']}"
        links = [("blocks", "blockedBy", args.addBlocks), ("blockedBy", "blocks", args.addBlockedBy)]
        for _, _, ids in links:
            for other_id in ids or ():
                other = _find(doc, other_id)
                if other["id"] == tid:
                    raise _Refused(f"Task #{tid} cannot block itself.")
        said = []
        for field in ("subject", "description", "activeForm", "status", "owner"):
            value = getattr(args, field)
            if value is not None and value != task.get(field):
                task[field] = value
                said.append(f"{field} {value!r}" if field in ("status", "owner") else field)
        for own, theirs, ids in links:
            for other_id in ids or ():
                other = _find(doc, other_id)
                if other["id"] not in task[own]:
                    task[own].append(other["id"])
                    said.append(f"{own} #{other['id']}")
                if tid not in other[theirs]:
                    other[theirs].append(tid)
        if args.metadata:
            for key, value in args.metadata.items():
                if value is None:
                    task["metadata"].pop(key, None)
                else:
                    task["metadata"][key] = value
            said.append("metadata")
        return f"Updated task #{tid}: {', '.join(said)}" if said else f"Task #{tid} was already as given."

    try:
        doc, text = await change_list(ctx, update)
    except _Refused as exc:
        return ToolResult.error(f"{exc} Nothing was changed. {listing(await read_list(ctx))}")
    _changed(ctx, doc)
    return _result(text, doc)


def _todo_listing(todos: list[dict[str, Any]]) -> str:
    if not todos:
        return "The todo list is empty."
    marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
    return "\n".join(f"{marks[t['status']]} {t['activeForm'] if t['status'] == 'in_progress' else t['content']}"
                     for t in todos)


async def todo_write(args: TodoWriteInput, ctx: ToolContext) -> ToolResult:
    todos = [t.model_dump() for t in args.todos]

    def write(doc: dict[str, Any]) -> None:
        doc["todos"] = todos

    doc, _ = await change_list(ctx, write)
    _changed(ctx, doc)
    counts = {s: sum(1 for t in todos if t["status"] == s) for s in ("completed", "in_progress", "pending")}
    head = (f"Todo list updated: {counts['completed']} completed, {counts['in_progress']} in progress, "
            f"{counts['pending']} pending. Keep it current as you work.")
    return ToolResult(content=[TextContent(text=f"{head}\n\n{_todo_listing(todos)}")],
                      structured_content={"todos": todos})

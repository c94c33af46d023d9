"""Agent, SendMessage, ListAgents and DeleteAgent."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult, clamp_policy

from ._children import (AGENT_TOOL, CHILD_OUTPUT_SCHEMA, PLUGIN, RESUMED_NOTE, Prepared, family, host_listens,
                        make_session, new_agent_id, records_for, start_run, terms_of, when)
from ._definitions import AgentDefinition
from ._describe import definitions_for
from ._models import AgentInput, DeleteAgentInput, ListAgentsInput, SendMessageInput, SubagentHandbackInput
from ._records import AgentRecord, Terms

if TYPE_CHECKING:
    from pegboard import Session, ToolContext

    from ._config import SubtasksConfig

__all__ = ["agent", "delete_agent", "list_agents", "send_message", "subagent_handback"]


def _server_names(servers: list[str]) -> list[str]:
    return [f"mcp__{name}" for name in servers]


def _headless(ctx: ToolContext) -> bool:
    caller = getattr(ctx.plugin_context.hook, "pegboard_ask", None)
    return caller is None or not caller.get_hookimpls()


def system_prompt(ctx: ToolContext, definition: AgentDefinition, agent_id: str, label: str,
                  workdir: str | None, worktree: dict[str, str] | None) -> str:
    parent = ctx.session
    lines = [definition.prompt, "", "# Where you are",
             f"You are the sub-agent {agent_id} ({definition.name}), started by {' > '.join(parent.chain)} "
             f"for: {label}.",
             f"Working directory: {workdir or parent.root}."]
    if worktree:
        lines.append(f"It is a git worktree of your own (branch {worktree['branch']}): your changes stay there "
                     "until someone merges them; commit what you want kept.")
    if _headless(ctx):
        lines.append("Nobody can approve calls for you: a call that needs a person's approval is denied. Work "
                     "with what you may do, and say in your report which calls were refused.")
    lines.append("Your final reply is your report to the agent that started you: make it complete.")
    if parent.plugin_state(PLUGIN).get(CHILD_OUTPUT_SCHEMA) is not None:
        lines.append("Your answer is wanted as data: before your final reply, hand it in with StructuredOutput.")
    return "\n".join(lines)


async def agent(args: AgentInput, ctx: ToolContext) -> ToolResult:
    config: SubtasksConfig = ctx.config
    parent = ctx.session
    mine = terms_of(parent)
    depth = mine.depth if mine else 0
    limit = mine.depth_limit if mine else config.max_depth
    if depth >= limit:
        return ToolResult.error(f"No more sub-agents can start here: this is depth {depth} of at most {limit}.")
    definitions = definitions_for(ctx.plugin_context)
    wanted = args.subagent_type or "general-purpose"
    definition = definitions.get(wanted)
    if definition is None:
        return ToolResult.error(f"There is no agent type {wanted!r}. Available: "
                                f"{', '.join(sorted(definitions.agents)) or 'none'}.")
    if mine and mine.agent_types is not None and definition.name not in mine.agent_types:
        return ToolResult.error(f"This agent may start only these types: {', '.join(mine.agent_types) or 'none'}.")
    records = records_for(ctx)
    if args.name and await records.find(parent.id, args.name) is not None:
        return ToolResult.error(f"This session already has an agent named {args.name!r}; pick another name, or "
                                f"SendMessage to it.")
    mode = parent.policy.name
    for requested in (definition.permission_mode, args.mode):
        if requested:
            mode = clamp_policy(requested, mode).name
    child_limit = limit if args.max_depth is None else min(limit, depth + 1 + args.max_depth)
    hide = [*config.deny_tools, *_server_names(config.deny_servers), *definition.disallowed, *args.deny_tools,
            *_server_names(args.deny_servers)]
    if depth + 1 >= child_limit:
        hide.append(AGENT_TOOL)  # SendMessage, ListAgents and DeleteAgent go with it
    hide += definition.core_tools_dropped(parent.offered())
    agent_id = new_agent_id()
    worktree = None
    if (args.isolation or definition.isolation) == "worktree":
        from ._worktree import WorktreeError, make_worktree

        try:
            worktree = await make_worktree(parent.root, agent_id)
        except WorktreeError as exc:
            return ToolResult.error(str(exc))
    workdir = worktree["workdir"] if worktree else None
    max_turns = min(definition.max_turns or config.max_turns, config.max_turns)
    terms = Terms(agent_type=definition.name, label=args.description.strip() or definition.name, mode=mode,
                  depth=depth + 1, depth_limit=child_limit, hide=tuple(dict.fromkeys(hide)),
                  only=definition.tools, agent_types=definition.agent_types,
                  model=args.model or definition.model, max_turns=max_turns,
                  system_prompt=system_prompt(ctx, definition, agent_id, args.description, workdir, worktree),
                  working_dirs=(workdir,) if workdir else (), worktree=worktree, name=args.name,
                  access={grant.tool: grant.access for grant in args.tool_access})
    try:
        child = make_session(parent, agent_id, terms)
    except ValueError as exc:
        return ToolResult.error(f"The agent's session could not be made: {exc}")
    record = AgentRecord(id=agent_id, parent_id=parent.id, terms=terms)
    token = await records.create(record)
    prompt = args.prompt
    notes: list[str] = []
    if definition.skills:
        prompt = await _with_skills(child, definition.skills, prompt)
    background = _background(ctx, args.run_in_background, definition.background, notes)
    prep = Prepared(ctx, records, record, token, child, prompt, follow_up=False, notes=notes)

    def headline(task_id: str) -> str:
        return (f"Started the {definition.name} agent ({args.description}) in the background as {task_id}. "
                f"Its report arrives when it finishes; TaskOutput {task_id} fetches it, TaskStop {task_id} "
                f"stops it. Once it is done, SendMessage to {agent_id} asks it a follow-up.")

    return await start_run(prep, background, headline)


def _background(ctx: ToolContext, asked: bool | None, default: bool | None, notes: list[str]) -> bool:
    if asked is not None:
        return asked
    wanted = default if default is not None else ctx.config.background
    if wanted and not host_listens(ctx):
        notes.append("(It ran in the foreground: nothing here would deliver a background report.)")
        return False
    return bool(wanted)


async def _with_skills(child: Session, skills: tuple[str, ...], prompt: str) -> str:
    """The definition's skills, started in the child's own session (through
    its permission rules like any call), ahead of the task."""
    parts = []
    for skill in skills:
        result = await child.call("Skill", {"skill": skill})
        if result.is_error:
            parts.append(f"(The skill {skill!r} could not be started for you: {result.text_content()})")
        else:
            parts.append(result.text_content())
    return "\n\n".join([*parts, prompt])


async def send_message(args: SendMessageInput, ctx: ToolContext) -> ToolResult:
    parent = ctx.session
    records = records_for(ctx)
    record = await records.find(parent.id, args.to)
    if record is None:
        return ToolResult.error(f"No agent {args.to!r} among this session's sub-agents; ListAgents lists them.")
    token = await records.claim(record.id)
    if token is None:
        live = family(parent).live.get(record.id)
        task = f" (task {live.task_id}; TaskOutput waits for it)" if live and live.task_id else ""
        return ToolResult.error(f"{record.id} is busy with another prompt{task}. A follow-up runs one at a time; "
                                "send this one when it is done.")
    notes: list[str] = []
    live = family(parent).live.get(record.id)
    prompt = args.message
    if live is not None and not live.session.closed:
        child = live.session
    else:
        try:
            child = make_session(parent, record.id, record.terms)
        except ValueError as exc:
            await records.finish(record.id, token, state=record.state, turns=record.turns, report=record.report)
            return ToolResult.error(f"{record.id} cannot run again here: {exc}")
        prompt = f"{RESUMED_NOTE}\n\n{prompt}"
    prep = Prepared(ctx, records, replace(record, state="running"), token, child, prompt, follow_up=True,
                    notes=notes)
    background = _background(ctx, None, None, notes)

    def headline(task_id: str) -> str:
        return (f"{record.id} is working on your message in the background as {task_id}; its reply arrives when "
                f"it finishes (TaskOutput {task_id} fetches it, TaskStop {task_id} stops it).")

    return await start_run(prep, background, headline)


async def list_agents(args: ListAgentsInput, ctx: ToolContext) -> ToolResult:
    children = await records_for(ctx).children(ctx.session.id)
    if not children:
        return ToolResult.text("This session has started no sub-agents.")
    rows: list[dict[str, Any]] = []
    lines = []
    for record in children:
        terms = record.terms
        label = f"{terms.name}: {terms.label}" if terms.name else terms.label
        lines.append(f"{record.id}\t{label}\t{terms.agent_type}\t{record.shown_state}\tturns={record.turns}\t"
                     f"last_active={when(record.last_active)}")
        rows.append({"id": record.id, "name": terms.name, "label": terms.label, "type": terms.agent_type,
                     "state": record.shown_state, "turns": record.turns, "last_active": record.last_active,
                     "mode": terms.mode})
    return ToolResult(content=ToolResult.text("\n".join(lines)).content, structured_content={"agents": rows})


async def delete_agent(args: DeleteAgentInput, ctx: ToolContext) -> ToolResult:
    parent = ctx.session
    records = records_for(ctx)
    record = await records.find(parent.id, args.agent)
    if record is None:
        return ToolResult.error(f"No agent {args.agent!r} among this session's sub-agents; ListAgents lists them.")
    live = family(parent).live.pop(record.id, None)
    if live is not None and live.task_id is not None:
        await parent.tasks.stop(live.task_id)
    elif record.busy and not record.stale and live is None:
        return ToolResult.error(f"{record.id} is running in another process; stop it there first.")
    if live is not None:
        await live.session.aclose()
    gone = await records.delete(record.id)
    if parent.durable:
        parent.delete_child(record.id)
    kept = ""
    if record.terms.worktree:
        from ._worktree import finish_worktree

        kept = await finish_worktree(record.terms.worktree)
    below = f" and {len(gone) - 1} agent(s) it had started" if len(gone) > 1 else ""
    return ToolResult.text(f"Deleted {record.id}{below}: its conversation is gone. What it wrote to disk stays."
                           + (f" {kept}" if kept else ""))


async def subagent_handback(args: SubagentHandbackInput, ctx: ToolContext) -> ToolResult:
    from ._children import run_of

    run = run_of(ctx.session)
    if run is None:
        return ToolResult.error("No run of yours is waiting for a report in this process; end your turn with "
                                "the report as your reply instead.")
    if run.handback is not None:
        return ToolResult.error("You have already handed your report back; your run is over.")
    run.handback = args.message
    run.handed_back.set()
    return ToolResult.text("Your report was handed to the agent that started you, and your run ends here.")

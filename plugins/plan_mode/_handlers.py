"""EnterPlanMode and ExitPlanMode."""

from __future__ import annotations

from pathlib import Path

from pegboard import ToolContext, ToolResult
from pegboard.paths import is_within, resolve_path

from ._models import EnterPlanModeInput, ExitPlanModeInput

__all__ = ["MAX_PLAN_CHARS", "enter_plan_mode", "exit_plan_mode"]

MAX_PLAN_CHARS = 50_000
# The modes the person may pick to carry on in, besides the one the session
# was in before plan mode.
_NEXT_MODES = ("default", "acceptEdits", "auto")
_KEEP_PLANNING = "keep planning"


async def enter_plan_mode(args: EnterPlanModeInput, ctx: ToolContext) -> ToolResult:
    session = ctx.session
    if session.mode == "plan":
        return ToolResult.text("The session is already in plan mode. Explore, then present your plan with "
                               "ExitPlanMode.")
    ctx.state["mode_before_plan"] = session.mode
    session.set_mode("plan")
    if session.mode != "plan":  # an operator's ceiling kept the session where it was
        return ToolResult.error(f"The session could not switch to plan mode (it stays in {session.mode}).")
    return ToolResult.text(
        "The session is now in plan mode. Only read-only tools run: explore the code and think the change "
        "through, but change nothing. When you know what to do, present the plan with ExitPlanMode; the person "
        "approves it (or not) and picks how you carry on.")


def _plan_text(args: ExitPlanModeInput, ctx: ToolContext) -> str:
    if args.plan and args.plan.strip():
        return args.plan.strip()
    if not args.planFile:
        raise ValueError("Give the plan as plan (Markdown text) or planFile (a file holding it).")
    path = resolve_path(args.planFile, ctx.root)
    if not any(is_within(path, Path(d)) for d in ctx.working_dirs):
        raise ValueError(f"planFile {args.planFile} is outside the working directories.")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"planFile {args.planFile} could not be read: {exc.strerror or exc}.") from None
    if not text.strip():
        raise ValueError(f"planFile {args.planFile} is empty.")
    return text.strip()


async def exit_plan_mode(args: ExitPlanModeInput, ctx: ToolContext) -> ToolResult:
    session = ctx.session
    if session.mode != "plan":
        return ToolResult.error(f"The session is not in plan mode (it is in {session.mode}); there is no plan "
                                "to approve. Carry on with the work.")
    try:
        plan = _plan_text(args, ctx)
    except ValueError as exc:
        return ToolResult.error(str(exc))
    if not ctx.plugin_context.host_implements("pegboard_elicit"):
        return ToolResult.error("Nobody can approve a plan in this session (its host cannot ask the person), so "
                                "it stays in plan mode. Present the plan in your reply instead.")
    before = ctx.state.get("mode_before_plan")
    choices = list(_NEXT_MODES)
    if isinstance(before, str) and before not in choices and before != "plan":
        choices.insert(0, before)
    default = before if isinstance(before, str) and before in choices else "default"
    shown = plan if len(plan) <= MAX_PLAN_CHARS else plan[:MAX_PLAN_CHARS] + "\n[... the rest of the plan is cut]"
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "title": "Approve and continue in", "enum": [*choices, _KEEP_PLANNING],
                     "default": default,
                     "description": f"a mode to leave plan mode in, or '{_KEEP_PLANNING}' to send it back"},
            "feedback": {"type": "string", "title": "Feedback", "description": "what to change (optional)"},
        },
        "required": ["mode"],
    }
    answer = await session.elicit("ExitPlanMode", f"The agent's plan:\n\n{shown}\n\nApprove it?", schema)
    content = answer.get("content") or {}
    feedback = str(content.get("feedback") or "").strip()
    said = f" The person said: {feedback}" if feedback else ""
    mode = content.get("mode") if answer["action"] == "accept" else None
    if mode not in choices:
        return ToolResult.text("The person did not approve the plan; the session stays in plan mode." + said
                               + " Revise the plan (or ask what to change) and present it again with ExitPlanMode.")
    try:
        session.set_mode(str(mode))
    except ValueError as exc:
        return ToolResult.error(f"The plan was approved, but the session could not switch to {mode}: {exc}")
    ctx.state.pop("mode_before_plan", None)
    return ToolResult.text(f"The person approved the plan; the session is now in {session.mode} mode. "
                           f"Carry it out.{said}")

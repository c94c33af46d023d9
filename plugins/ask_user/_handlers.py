"""AskUserQuestion's handler: the host's ``pegboard_ask_user``, else a form."""

from __future__ import annotations

import inspect
from typing import Any

from pegboard import Answer, Decision, TextContent, ToolContext, ToolResult

from ._models import OTHER, AskUserQuestionInput, Question

__all__ = ["answers_from_form", "ask_user_question", "question_form"]


def question_form(questions: list[Question]) -> tuple[str, dict[str, Any]]:
    """The questions as one flat form of primitive fields (what every
    elicitation front end can show): a single-choice question is one field
    of its labels and "Other"; a multi-select one a yes/no field per option;
    each has a text field for the person's own answer. Returns (message, schema)."""
    lines: list[str] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    for n, q in enumerate(questions, 1):
        lines.append(f"{n}. [{q.header}] {q.question}" + (" (pick any number)" if q.multiSelect else ""))
        for option in q.options:
            lines.append(f"   - {option.label}: {option.description}")
            if option.preview:
                lines.extend(f"     | {line}" for line in option.preview.splitlines()[:20])
        if q.multiSelect:
            for m, option in enumerate(q.options, 1):
                properties[f"q{n}_{m}"] = {"type": "boolean", "title": f"{q.header}: {option.label}",
                                           "description": option.description, "default": False}
        else:
            properties[f"q{n}"] = {"type": "string", "title": q.header, "description": q.question,
                                   "enum": [o.label for o in q.options] + [OTHER]}
            required.append(f"q{n}")
        properties[f"q{n}_other"] = {"type": "string", "title": f"{q.header}: {OTHER.lower()}",
                                     "description": "your own answer (with Other, or besides the choices)"}
    schema = {"type": "object", "properties": properties, "required": required}
    return "\n".join(lines), schema


def answers_from_form(questions: list[Question], content: dict[str, Any]) -> dict[str, str]:
    """The form's fields back as an answer per question."""
    answers: dict[str, str] = {}
    for n, q in enumerate(questions, 1):
        other = str(content.get(f"q{n}_other") or "").strip()
        if q.multiSelect:
            picked = [o.label for m, o in enumerate(q.options, 1) if content.get(f"q{n}_{m}") in (True, "true")]
            if other:
                picked.append(other)
            answers[q.question] = ", ".join(picked)
        else:
            choice = str(content.get(f"q{n}") or "")
            answers[q.question] = (other or OTHER) if choice == OTHER else (choice or other)
    return answers


async def _from_host(ctx: ToolContext, questions: list[dict[str, Any]]) -> dict[str, Any] | Answer | None:
    hook = getattr(ctx.plugin_context.hook, "pegboard_ask_user", None)
    if hook is None or not hook.get_hookimpls():
        return None
    async with ctx.session.person_lock:  # one question at a time to the person, sub-agents' included
        result = hook(session=ctx.session, questions=questions)
        if inspect.isawaitable(result):
            result = await result
    if isinstance(result, Answer) and result.pending:
        return result
    if result is not None and not isinstance(result, dict):
        raise TypeError(f"pegboard_ask_user returned {type(result).__name__}, not a dict or Answer.later()")
    return result


def _park(args: AskUserQuestionInput, ctx: ToolContext) -> ToolResult:
    """The question kept as a pending call for the person to answer later (``_later``)."""
    call_input = args.model_dump(exclude_none=True)
    waiting = ctx.session.pending.hold(ctx.tool.name, call_input, ctx.call_id, Decision(
        "ask", "the person will answer your questions later", "host",
        suggestions=(ctx.tool.name,)))
    text = (f"Your questions wait for the person's answers as pending call {waiting.id}; you will be given "
            "the answers when they reply. Carry on with work that does not depend on them.")
    return ToolResult(content=[TextContent(text=text)],
                      structured_content={"pending": waiting.id, "status": "pending"})


def _answered(questions: list[Question], answers: dict[str, Any], annotations: dict[str, Any] | None,
              metadata: dict[str, Any] | None) -> ToolResult:
    lines = []
    for q in questions:
        answer = str(answers.get(q.question) or "").strip()
        lines.append(f'"{q.question}" = "{answer}"' if answer else f'"{q.question}" = (no answer)')
        note = (annotations or {}).get(q.question)
        if note:
            lines.append(f"  note: {note}")
    text = ("The person answered your questions:\n" + "\n".join(lines)
            + "\nCarry on with these answers in mind.")
    data = {"answers": {q.question: str(answers.get(q.question) or "") for q in questions},
            "annotations": annotations or {}, "metadata": metadata or {}}
    return ToolResult(content=[TextContent(text=text)], structured_content=data)


async def ask_user_question(args: AskUserQuestionInput, ctx: ToolContext) -> ToolResult:
    questions = args.questions
    if args.answers:  # a front end that asked already (an approval step filled them in)
        return _answered(questions, args.answers, args.annotations, args.metadata)
    from ._later import take_answers

    recorded = await take_answers(ctx, args.model_dump(exclude_none=True))
    if recorded is not None:  # answered later (a pending call approved with the answers)
        return _answered(questions, recorded["answers"], recorded.get("annotations") or None, args.metadata)
    plain = [q.model_dump(exclude_none=True) for q in questions]
    try:
        reply = await _from_host(ctx, plain)
    except Exception as exc:  # the host's bug: the model is told nobody answered, never a traceback
        return ToolResult.error(f"The question could not be put to the person (the host failed: "
                                f"{type(exc).__name__}). Carry on with your best judgement, or ask in your reply.")
    if isinstance(reply, Answer):
        return _park(args, ctx)
    if reply is None:
        message, schema = question_form(questions)
        form = await ctx.session.elicit("AskUserQuestion", message, schema)
        if form["action"] == "accept":
            reply = {"answers": answers_from_form(questions, form.get("content") or {})}
        else:
            reply = {"declined": True}
    if reply.get("declined") or not isinstance(reply.get("answers"), dict):
        return ToolResult.text("The person did not answer your questions. Carry on with your best judgement, "
                               "saying what you assumed, or ask again in your reply.")
    annotations = reply.get("annotations") if isinstance(reply.get("annotations"), dict) else None
    return _answered(questions, reply["answers"], annotations, args.metadata)

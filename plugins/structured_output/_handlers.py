"""StructuredOutput's handler: check the answer against the session's schema."""

from __future__ import annotations

from typing import Any

from pegboard import TextContent, ToolContext, ToolResult

__all__ = ["MAX_ERRORS_SHOWN", "answer_problems", "structured_output"]

MAX_ERRORS_SHOWN = 20


def answer_problems(schema: dict[str, Any], answer: Any) -> list[str]:
    """Each way ``answer`` breaks ``schema``, as ``where: what`` (empty: it matches)."""
    import jsonschema  # type: ignore[import-untyped,unused-ignore]  # only an answer schema pays for it

    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(answer), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'.'.join(map(str, e.absolute_path)) or '(the answer)'}: {e.message}" for e in errors]


async def structured_output(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    schema = ctx.session.output_schema
    if schema is None:
        return ToolResult.error("This session has no answer schema, so there is no structured answer to give; "
                                "answer in text instead.")
    problems = answer_problems(schema, args)
    if problems:
        shown = problems[:MAX_ERRORS_SHOWN]
        more = f"\n- ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        return ToolResult.error("Your answer does not match the required schema, so it was not accepted. "
                                "Fix these and call StructuredOutput again with the whole answer:\n- "
                                + "\n- ".join(shown) + more)
    ctx.session.structured_output = args
    ctx.emit("structured_output", {"output": args})
    return ToolResult(content=[TextContent(text="Answer accepted and handed to the host.")],
                      structured_content=args)

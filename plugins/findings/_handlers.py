"""ReportFindings' handler: the validated findings to the host."""

from __future__ import annotations

from pegboard import TextContent, ToolContext, ToolResult

from ._models import ReportFindingsInput

__all__ = ["report_findings"]


async def report_findings(args: ReportFindingsInput, ctx: ToolContext) -> ToolResult:
    findings = [f.model_dump(exclude_none=True) for f in args.findings]
    report = {"findings": findings, "level": args.level}
    ctx.emit("findings", report)
    count = len(findings)
    text = (f"Reported {count} finding{'' if count == 1 else 's'} to the person's front end."
            if count else "Reported that the review found nothing.")
    return ToolResult(content=[TextContent(text=text)], structured_content=report)

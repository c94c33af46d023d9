"""What ``pegboard serve`` offers besides tools: resources, prompts,
completions and the log level.

Resources are what a session honestly has to give: its scratchpad entries
(``pegboard://scratchpad/<name>``) and the tool output it saved to files
because it was too long to return (``pegboard://results/<file>``). Prompts
come from plugins implementing ``pegboard_prompts`` (the skills plugin: each
skill, with one argument that becomes ``$ARGUMENTS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp import MCPError

from ._handlers import loaded_context

__all__ = ["extra_handlers"]

SCRATCHPAD = "pegboard://scratchpad/"
RESULTS = "pegboard://results/"
INVALID_PARAMS = -32602
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _results(session: Any) -> Path:
    return Path(session.data_path) / "results"


def _resources(session: Any) -> list[types.Resource]:
    out = [types.Resource(uri=SCRATCHPAD + quote(name, safe=""), name=name, mime_type="text/plain",
                          description=f"Scratchpad entry ({len(text):,} characters)", size=len(text.encode()))
           for name, text in sorted(session.scratchpad.items())]
    folder = _results(session)
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.is_file():
                out.append(types.Resource(uri=RESULTS + quote(path.name, safe=""), name=path.name,
                                          mime_type="text/plain", size=path.stat().st_size,
                                          description="Tool output saved because it was too long to return"))
    return out


def _read(session: Any, uri: str) -> str:
    if uri.startswith(SCRATCHPAD):
        name = unquote(uri[len(SCRATCHPAD):])
        if name in session.scratchpad:
            return str(session.scratchpad[name])
    elif uri.startswith(RESULTS):
        name = unquote(uri[len(RESULTS):])
        path = _results(session) / name
        if "/" not in name and name not in ("", ".", "..") and path.is_file():
            return path.read_text(encoding="utf-8", errors="replace")
    raise MCPError(INVALID_PARAMS, f"no resource {uri}; resources/list shows what this session has")


def _prompts(toolbox: Any) -> list[dict[str, Any]]:
    context = loaded_context(toolbox)
    found: list[dict[str, Any]] = []
    for outcome in context.each("pegboard_prompts", context=context):
        if outcome.error is None and outcome.value:
            found.extend(p for p in outcome.value if isinstance(p, dict) and p.get("name"))
    return found


def extra_handlers(toolbox: Any, registry: Any) -> dict[str, Any]:
    """The low-level Server's handlers for everything but tools."""

    async def on_list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=_resources(await registry.fresh(ctx)))

    async def on_list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=SCRATCHPAD + "{name}", name="scratchpad entry",
                                   mime_type="text/plain", description="A scratchpad entry of this session, by name"),
        ])

    async def on_read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = _read(await registry.fresh(ctx), uri)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/plain",
                                                                             text=text)])

    async def on_list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p["name"], description=p.get("description"), arguments=[
                types.PromptArgument(name=a["name"], description=a.get("description"),
                                     required=bool(a.get("required"))) for a in p.get("arguments", [])])
            for p in _prompts(toolbox)])

    async def on_get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        context = loaded_context(toolbox)
        arguments = {k: str(v) for k, v in (params.arguments or {}).items()}
        for outcome in context.each("pegboard_prompt", context=context, name=params.name, arguments=arguments):
            if outcome.error is None and isinstance(outcome.value, str):
                known = next((p for p in _prompts(toolbox) if p["name"] == params.name), {})
                return types.GetPromptResult(description=known.get("description"), messages=[
                    types.PromptMessage(role="user", content=types.TextContent(type="text", text=outcome.value))])
        raise MCPError(INVALID_PARAMS, f"no prompt called {params.name!r}; prompts/list shows them")

    async def on_completion(ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Prompt names for a prompt reference; scratchpad names for the template."""
        typed = params.argument.value.lower()
        ref = params.ref
        if getattr(ref, "type", "") == "ref/resource":
            names = sorted((await registry.fresh(ctx)).scratchpad)
        else:
            names = []  # a skill's $ARGUMENTS is free text: nothing to offer
        values = [n for n in names if n.lower().startswith(typed)]
        return types.CompleteResult(completion=types.Completion(values=values[:100], total=len(values),
                                                                has_more=len(values) > 100))

    async def on_set_logging_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        if params.level not in LEVELS:
            raise MCPError(INVALID_PARAMS, f"unknown level {params.level!r}")
        registry.log_level = params.level
        return types.EmptyResult()

    return {"on_list_resources": on_list_resources, "on_list_resource_templates": on_list_resource_templates,
            "on_read_resource": on_read_resource, "on_list_prompts": on_list_prompts, "on_get_prompt": on_get_prompt,
            "on_completion": on_completion, "on_set_logging_level": on_set_logging_level}

"""Tools for the pipeline tests, registered through a real entry point by
``_plugin_factory.PIPETEST`` (the plugin module only imports the hooks from here).

Every tool that takes time records ``(label, kind, start, end)`` with
``time.monotonic()`` in ``ctx.state["log"]``: the tests judge concurrency from
those intervals, never from absolute speed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from pegboard import Tool, ToolContext, ToolResult, Vote, hookimpl
from pegboard._api.decisions import PermissionRequest


class SleepIn(BaseModel):
    label: str = Field(description="What to record.")
    seconds: float = Field(default=0.2, ge=0, description="How long to sleep.")


async def sleep(args: SleepIn, ctx: ToolContext) -> str:
    start = time.monotonic()
    await asyncio.sleep(args.seconds)
    ctx.state.setdefault("log", []).append((args.label, "read", start, time.monotonic()))
    return f"slept {args.label}"


class WriteIn(BaseModel):
    label: str
    path: str = Field(description="File to write, relative to the project root.")
    text: str = ""
    seconds: float = Field(default=0.1, ge=0)


async def write(args: WriteIn, ctx: ToolContext) -> str:
    start = time.monotonic()
    await asyncio.sleep(args.seconds)
    target = Path(ctx.root) / args.path
    target.write_text(args.text, encoding="utf-8")
    ctx.state.setdefault("log", []).append((args.label, "write", start, time.monotonic()))
    return f"wrote {len(args.text)} characters to {args.path}"


class ReadFileIn(BaseModel):
    label: str
    path: str


async def read_file(args: ReadFileIn, ctx: ToolContext) -> str:
    start = time.monotonic()
    target = Path(ctx.root) / args.path
    text = target.read_text(encoding="utf-8") if target.exists() else "<missing>"
    await asyncio.sleep(0.05)
    ctx.state.setdefault("log", []).append((args.label, "read", start, time.monotonic()))
    return text


class EchoIn(BaseModel):
    text: str = Field(description="Text to echo.")
    count: int = Field(default=1, ge=1, le=5, description="How many times.")
    mode: Literal["plain", "upper"] = Field(default="plain", description="How to echo.")


async def echo(args: EchoIn, ctx: ToolContext) -> ToolResult:
    # The arguments exactly as the handler got them: tests check that
    # pegboard's own parameters were taken out.
    ctx.state.setdefault("seen", []).append(args.model_dump())
    out = args.text * args.count
    return ToolResult.text(out.upper() if args.mode == "upper" else out)


class NoIn(BaseModel):
    pass


async def boom(args: NoIn, ctx: ToolContext) -> str:
    raise RuntimeError("the disk caught fire")


async def own_timeout(args: NoIn, ctx: ToolContext) -> str:
    raise TimeoutError("connecting to the server timed out")


def sync_boom(args: NoIn, ctx: ToolContext) -> str:
    raise ValueError("plain function failed in its thread")


async def leave(args: NoIn, ctx: ToolContext) -> str:
    sys.exit(3)


async def hang(args: NoIn, ctx: ToolContext) -> str:
    ctx.state["hang_started"] = True
    try:
        await asyncio.sleep(3600)
    finally:
        ctx.state["hang_cancelled"] = True  # proves the timeout really stopped it
    return "never"


async def swallow(args: NoIn, ctx: ToolContext) -> str:
    # Ignores cancellation and answers anyway: a badly behaved tool.
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        pass
    return "swallowed"


class GarbageIn(BaseModel):
    kind: Literal["int", "dict", "none"] = "int"


async def garbage(args: GarbageIn, ctx: ToolContext) -> Any:
    return {"int": 42, "dict": {"content": "nope"}, "none": None}[args.kind]


class BigIn(BaseModel):
    size: int = Field(ge=0)


async def big(args: BigIn, ctx: ToolContext) -> str:
    # Caps itself at 500 characters unless the caller lifted caps with scratchpad.
    text = "".join(chr(ord("a") + i % 26) for i in range(args.size))
    return text if ctx.uncapped else text[:500]


async def huge(args: BigIn, ctx: ToolContext) -> ToolResult:
    text = "".join(chr(ord("a") + i % 26) for i in range(args.size))
    # Like an MCP server: the same output again as structured content.
    return ToolResult(content=[ToolResult.text(text).content[0]], structured_content={"text": text})


class OwnIn(BaseModel):
    background: str = Field(description="A colour: the tool's own parameter.")
    scratchpad: int = Field(default=0, description="The tool's own number.")


async def own(args: OwnIn, ctx: ToolContext) -> str:
    return json.dumps(args.model_dump())


class HiddenIn(BaseModel):
    query: str = Field(description="What to look for.")
    limit: int = Field(default=10, description="How many results.")
    verbose: bool = Field(default=False, description="Say more.")


async def hidden(args: HiddenIn, ctx: ToolContext) -> str:
    return f"hidden {args.query} {args.limit}"


async def external(args: dict[str, Any], ctx: ToolContext) -> str:
    return json.dumps(args, sort_keys=True)


async def ticker(args: NoIn, ctx: ToolContext) -> str:
    for i in range(3):
        ctx.emit("monitor.line", {"line": f"tick {i}"})
        await asyncio.sleep(0)
    return "ticked"


class SlowIn(BaseModel):
    seconds: float = 0.3
    label: str = "slow"


async def slow(args: SlowIn, ctx: ToolContext) -> str:
    start = time.monotonic()
    await asyncio.sleep(args.seconds)
    ctx.state.setdefault("log", []).append((args.label, "background", start, time.monotonic()))
    return f"slow {args.label} done"


async def noop(args: NoIn, ctx: ToolContext) -> str:
    return "ok"


LONG_DESCRIPTION = ("Finds hidden things in the archive. " * 20).strip()


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None]) -> None:
    ro: dict[str, Any] = {"read_only": True, "permission": "read"}
    register(Tool(name="Sleep", handler=sleep, input_model=SleepIn, description="Sleeps.", **ro))
    register(Tool(name="ReadFile", handler=read_file, input_model=ReadFileIn, description="Reads a file.", **ro))
    register(Tool(name="WriteFile", handler=write, input_model=WriteIn, description="Writes a file.",
                  permission="workspace"))
    register(Tool(name="Echo", handler=echo, input_model=EchoIn, description="Echoes text.", **ro))
    register(Tool(name="Boom", handler=boom, input_model=NoIn, description="Raises.", **ro))
    register(Tool(name="OwnTimeout", handler=own_timeout, input_model=NoIn, description="Times out inside.",
                  **ro))
    register(Tool(name="SyncBoom", handler=sync_boom, input_model=NoIn, description="Raises in a thread.", **ro))
    register(Tool(name="Leave", handler=leave, input_model=NoIn, description="Calls sys.exit.", **ro))
    register(Tool(name="Hang", handler=hang, input_model=NoIn, description="Never ends.", timeout_s=0.3, **ro))
    register(Tool(name="Swallow", handler=swallow, input_model=NoIn, description="Ignores cancellation.",
                  timeout_s=0.2, **ro))
    register(Tool(name="Quick", handler=noop, input_model=NoIn, description="Short deadline, fast.",
                  timeout_s=0.1, **ro))
    register(Tool(name="Garbage", handler=garbage, input_model=GarbageIn, description="Returns junk.", **ro))
    register(Tool(name="Big", handler=big, input_model=BigIn, description="Capped text.",
                  lifts_caps_with_scratchpad=True, **ro))
    register(Tool(name="Huge", handler=huge, input_model=BigIn, description="Uncapped text.", **ro))
    register(Tool(name="Own", handler=own, input_model=OwnIn, description="Has its own background.", **ro))
    register(Tool(name="Hidden", handler=hidden, input_model=HiddenIn, description=LONG_DESCRIPTION,
                  loading="deferred", **ro))
    register(Tool(name="mcp__srv__add", handler=external, description="Adds numbers on a server.",
                  input_schema={"type": "object", "properties": {"n": {"type": "integer"},
                                                                 "background": {"type": "string"}},
                                "required": ["n"]}, loading="deferred", permission="read"))
    register(Tool(name="mcp__srv__plain", handler=external, description="A server tool.",
                  input_schema={"type": "object", "properties": {"x": {"type": "string"}}}, permission="read"))
    register(Tool(name="Ticker", handler=ticker, input_model=NoIn, description="Emits events.", **ro))
    register(Tool(name="Slow", handler=slow, input_model=SlowIn, description="Takes a while.", **ro))
    register(Tool(name="Noop", handler=noop, input_model=NoIn, description="Does nothing.", **ro))


@hookimpl
def pegboard_permission(request: PermissionRequest) -> Vote | None:
    if request.tool.plugin != "pipetest":
        return None
    label = request.input.get("label")
    if request.tool.name == "Sleep" and isinstance(label, str) and label.startswith("ask"):
        return Vote.ask(f"{label} needs a person's approval", suggest=("Sleep",))
    path = request.input.get("path")
    if isinstance(path, str) and "forbidden" in path:
        return Vote.deny(f"{path} is forbidden by the pipetest plugin")
    return None

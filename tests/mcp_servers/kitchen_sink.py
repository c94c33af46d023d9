"""A real MCP server (SDK MCPServer) for the mcp plugin's tests and bench.

stdio by default; ``--http PORT`` serves Streamable HTTP on 127.0.0.1.
``KS_VARIANT_FILE`` names a file whose text is appended to echo's
description, so a test can change the tool list between starts.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def build() -> MCPServer:
    variant = ""
    if path := os.environ.get("KS_VARIANT_FILE"):
        variant = Path(path).read_text().strip() if Path(path).exists() else ""
    server = MCPServer("kitchen-sink")

    @server.tool(description=("Echo the text back." + (f" {variant}" if variant else "")))
    def echo(text: str) -> str:
        return text

    if "no-add" not in variant:
        @server.tool(description="Add two integers.")
        def add(a: int, b: int) -> dict[str, int]:
            return {"sum": a + b}

    @server.tool(description="Return a tiny PNG image.")
    def picture() -> Image:
        return Image(data=PNG, format="png")

    @server.tool(description="Return text plus an embedded resource.")
    def bundle() -> list[Any]:
        return [
            TextContent(type="text", text="see attached"),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="memo://one", mime_type="text/plain", text="the memo")),
        ]

    @server.tool(description="Fail with a message the model can read.")
    def fail(why: str) -> str:
        raise ToolError(f"failed because {why}")

    @server.tool(description="Exit the server process in the middle of the call.")
    def crash() -> str:
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(description="Never answer.")
    async def hang() -> str:
        await asyncio.sleep(3600)
        return "unreachable"

    @server.tool(description="Start a grandchild process that sleeps; return its pid.")
    def spawn_grandchild() -> str:
        child = subprocess.Popen(["sleep", "300"])
        return str(child.pid)

    @server.tool(description="Redefine echo with a new description and announce the change.")
    async def mutate(description: str, ctx: Context) -> str:
        server.remove_tool("echo")

        def echo(text: str) -> str:
            return text

        server.add_tool(echo, description=description)
        await ctx.notify_tools_changed()  # 2026-07-28 listeners
        if ctx.protocol_version and ctx.protocol_version < "2026-07-28":
            await ctx.session.send_tool_list_changed()
        return "echo redefined"

    @server.tool(description="Add a tool called NAME that says hello, and announce the change.")
    async def grow(name: str, ctx: Context) -> str:
        def hello() -> str:
            return f"hello from {name}"

        server.add_tool(hello, name=name, description=f"Say hello from {name}.")
        await ctx.notify_tools_changed()
        if ctx.protocol_version and ctx.protocol_version < "2026-07-28":
            await ctx.session.send_tool_list_changed()
        return f"{name} added"

    @server.tool(description="Start a grandchild that ignores SIGTERM; return its pid.")
    def spawn_stubborn_grandchild() -> str:
        child = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 300 & wait"])
        return str(child.pid)

    @server.tool(description="Report this server's process id.", title="Process id")
    def whoami() -> str:
        return str(os.getpid())

    @server.resource("docs://readme", name="readme", mime_type="text/plain", description="The readme")
    def readme() -> str:
        return "read me first"

    @server.resource("docs://guide/intro", name="intro", mime_type="text/plain")
    def intro() -> str:
        return "intro text"

    @server.resource("docs://guide/deep/part", name="part", mime_type="text/plain")
    def part() -> str:
        return "deep part"

    @server.resource("docs://logo", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return PNG

    return server


def main() -> None:
    if os.environ.get("KS_NEVER_START"):
        import time

        time.sleep(3600)
    server = build()
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()


if __name__ == "__main__":
    main()

"""A real MCP server (SDK MCPServer) that asks its client things: a form
(elicitation), its roots, the client's model (sampling), and that sends progress and log messages, a
resource template and a prompt. Run by the client-capability tests, in the
handshake era (where servers can send requests to the client).
"""

from __future__ import annotations

import asyncio
import warnings

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

warnings.simplefilter("ignore", UserWarning)  # roots and protocol logging are deprecated in 2026-07-28


class Booking(BaseModel):
    name: str = Field(description="Who is booking")
    seats: int = Field(default=2, description="How many seats")


def build() -> MCPServer:
    server = MCPServer("capabilities")

    @server.tool(description="Ask the person for a booking and report what they said.")
    async def book(ctx: Context) -> str:
        result = await ctx.elicit("Who is the booking for?", Booking)
        if result.action != "accept":
            return f"booking {result.action}"
        return f"booked {result.data.seats} seats for {result.data.name}"

    @server.tool(description="List the client's roots.")
    async def roots(ctx: Context) -> str:
        listed = await ctx.request_context.session.list_roots()
        return "\n".join(str(r.uri) for r in listed.roots)

    @server.tool(description="Count to three with progress and log messages.")
    async def count(ctx: Context) -> str:
        for n in range(1, 4):
            await ctx.report_progress(n, 3, f"step {n}")
            await ctx.debug(f"debug {n}")
            await ctx.warning(f"warning {n}")
            await asyncio.sleep(0.01)
        return "counted"

    @server.tool(description="Ask the client's model for a haiku.")
    async def haiku(topic: str, ctx: Context) -> str:
        from mcp_types import SamplingMessage, TextContent

        session = ctx.request_context.session
        if session.client_params.capabilities.sampling is None:
            return "the client offers no sampling"
        try:
            result = await session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=f"A haiku about {topic}"))],
                max_tokens=60, system_prompt="Answer in one line.")
        except Exception as exc:
            return f"sampling failed: {exc}"
        return f"{result.model}: {result.content.text}"

    @server.resource("notes://{topic}", name="note", description="A note on a topic", mime_type="text/plain")
    def note(topic: str) -> str:
        return f"a note on {topic}"

    @server.prompt(description="Review a file")
    def review(path: str, focus: str = "bugs") -> str:
        return f"Review {path} for {focus}."

    return server


if __name__ == "__main__":
    build().run()

"""pegboard's tools for the Claude Agent SDK, through an in-process MCP server.

    pip install 'pegboard[claude-agent-sdk]'
    export ANTHROPIC_API_KEY=...
    python claude_agent_sdk_agent.py "What is in this folder?"

Claude sees pegboard's tools as mcp__pegboard__<Tool>, in place of its own.
pegboard's permission engine decides every call; a call that needs
approval is put to you at the terminal.
"""

import asyncio
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from pegboard import Answer, Toolbox, hookimpl
from pegboard.integrations.claude_agent_sdk import mcp_server

MODEL = os.environ.get("MODEL", "claude-sonnet-4-5")


class Terminal:
    @hookimpl
    async def pegboard_ask(self, request, decision):
        reply = await asyncio.to_thread(input, f"{decision.reason}. Allow {request.tool.name}? [y/N] ")
        return Answer(allow=reply.strip().lower() == "y", message="The user said no.")


async def main(task: str) -> None:
    session = Toolbox.load(cwd=".", host=Terminal()).session("default")
    options = ClaudeAgentOptions(model=MODEL, mcp_servers={"pegboard": mcp_server(session)},
                                 tools=[],                              # none of the CLI's own tools
                                 allowed_tools=["mcp__pegboard__*"])    # pegboard decides, not the CLI
    async for message in query(prompt=task, options=options):
        if isinstance(message, ResultMessage):
            print(message.result)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

"""pegboard's tools for a pydantic-ai agent.

    pip install 'pegboard[pydantic-ai]' 'pydantic-ai-slim[anthropic]'
    export ANTHROPIC_API_KEY=...
    python pydantic_ai_agent.py "What is in this folder?"

pegboard's permission engine decides every call; a call that needs
approval ends the run with pydantic-ai's approval requests, answered here
at the terminal, and the run goes on with the answers.
"""

import asyncio
import os
import sys

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied

from pegboard import Toolbox
from pegboard.integrations.pydantic_ai import PegboardToolset

MODEL = os.environ.get("MODEL", "claude-sonnet-4-5")


async def main(task: str) -> None:
    session = Toolbox.load(cwd=".").session("default")
    agent = Agent(f"anthropic:{MODEL}", toolsets=[PegboardToolset(session)],
                  output_type=[str, DeferredToolRequests])
    run = await agent.run(task)
    while isinstance(run.output, DeferredToolRequests):  # pegboard asked: a person decides
        answers = {}
        for call in run.output.approvals:
            reason = run.output.metadata[call.tool_call_id]["reason"]
            reply = input(f"{reason}. Allow {call.tool_name}? [y/N] ")
            answers[call.tool_call_id] = True if reply.strip().lower() == "y" else ToolDenied("The user said no.")
        run = await agent.run(message_history=run.all_messages(),
                              deferred_tool_results=DeferredToolResults(approvals=answers))
    print(run.output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

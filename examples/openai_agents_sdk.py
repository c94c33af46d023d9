"""pegboard's tools for an OpenAI Agents SDK agent (on the Responses API).

    pip install 'pegboard[openai-agents]'
    export OPENAI_API_KEY=...
    python openai_agents_sdk.py "What is in this folder?"

pegboard's permission engine decides every call; a call that needs
approval interrupts the run, is put to you at the terminal, and the run
goes on from where it stopped.
"""

import asyncio
import os
import sys

from agents import Agent, Runner

from pegboard import Toolbox
from pegboard.integrations.openai_agents import function_tools

MODEL = os.environ.get("MODEL", "gpt-5")


async def main(task: str) -> None:
    session = Toolbox.load(cwd=".").session("default")
    agent = Agent(name="assistant", model=MODEL, tools=function_tools(session))
    result = await Runner.run(agent, task)
    while result.interruptions:  # pegboard asked: a person decides
        state = result.to_state()
        for item in result.interruptions:
            reply = input(f"Allow {item.tool_name}({item.arguments})? [y/N] ")
            if reply.strip().lower() == "y":
                state.approve(item)
            else:
                state.reject(item)
        result = await Runner.run(agent, state)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

"""pegboard's tools in a LangChain tool loop.

    pip install 'pegboard[langchain]' langchain-anthropic
    export ANTHROPIC_API_KEY=...
    python langchain_agent.py "What is in this folder?"

pegboard's permission engine decides every call. langchain-core has no
approval step, so a call that needs approval waits as a pending call: the
model is told so, you answer at the terminal, and the model gets the
call's result.
"""

import asyncio
import os
import sys

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import HumanMessage

from pegboard import Answer, Toolbox
from pegboard.integrations.langchain import tools

MODEL = os.environ.get("MODEL", "claude-sonnet-4-5")


async def main(task: str) -> None:
    session = Toolbox.load(cwd=".").session("default")
    chat = ChatAnthropic(model=MODEL)
    messages = [HumanMessage(task)]
    while True:
        offered = tools(session)  # again each turn: ToolSearch may have loaded tools
        reply = await chat.bind_tools(offered).ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            print(reply.text)
            return
        by_name = {tool.name: tool for tool in offered}
        messages += await asyncio.gather(*(by_name[call["name"]].ainvoke(call) for call in reply.tool_calls))
        for waiting in session.pending.list():  # asks wait as pending calls: a person answers
            reply = input(f"{waiting.reason}. Allow {waiting.tool}? [y/N] ")
            answer = Answer(allow=reply.strip().lower() == "y", message="The user said no.")
            result = await session.pending.resolve(waiting.id, answer)
            messages.append(HumanMessage(f"Pending call {waiting.id} ({waiting.tool}): {result.text_content()}"))


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

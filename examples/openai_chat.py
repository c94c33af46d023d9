"""pegboard's tools in a loop on the OpenAI Chat Completions API (or any
server that speaks it).

    pip install pegboard openai
    export OPENAI_API_KEY=...
    python openai_chat.py "What is in this folder?"

pegboard's permission engine decides every call; a call that needs
approval is put to you at the terminal.
"""

import asyncio
import os
import sys

import openai

from pegboard import Answer, Toolbox, ToolResult, hookimpl

MODEL = os.environ.get("MODEL", "gpt-5")


class Terminal:
    @hookimpl
    async def pegboard_ask(self, request, decision):
        reply = await asyncio.to_thread(input, f"{decision.reason}. Allow {request.tool.name}? [y/N] ")
        return Answer(allow=reply.strip().lower() == "y", message="The user said no.")


async def main(task: str) -> None:
    client = openai.AsyncOpenAI()  # OPENAI_API_KEY (and OPENAI_BASE_URL) from the environment
    session = Toolbox.load(cwd=".", host=Terminal()).session("default")
    messages = [{"role": "user", "content": task}]
    while True:
        catalogue = session.catalogue()  # again each turn: ToolSearch may have loaded tools
        system = [{"role": "system", "content": catalogue.deferred_text()}] if catalogue.deferred else []
        reply = await client.chat.completions.create(model=MODEL, messages=system + messages,
                                                     tools=catalogue.to_openai(strict=True))
        message = reply.choices[0].message
        messages.append(message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True))
        if not message.tool_calls:
            print(message.content)
            return
        calls = message.tool_calls
        results = await session.call_batch([(c.function.name, c.function.arguments, c.id) for c in calls])
        # Tool messages carry text only: images follow in a user message, after all of the turn's tool messages.
        messages += ToolResult.openai_chat_messages([(c.id, result) for c, result in zip(calls, results)])


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

"""pegboard's tools in a loop on the Anthropic Messages API.

    pip install pegboard anthropic
    export ANTHROPIC_API_KEY=...
    python anthropic_messages.py "What is in this folder?"

pegboard's permission engine decides every call; a call that needs
approval is put to you at the terminal.
"""

import asyncio
import os
import sys

import anthropic

from pegboard import Answer, Toolbox, hookimpl

MODEL = os.environ.get("MODEL", "claude-sonnet-4-5")


class Terminal:
    @hookimpl
    async def pegboard_ask(self, request, decision):
        reply = await asyncio.to_thread(input, f"{decision.reason}. Allow {request.tool.name}? [y/N] ")
        return Answer(allow=reply.strip().lower() == "y", message="The user said no.")


async def main(task: str) -> None:
    client = anthropic.AsyncAnthropic()  # ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL) from the environment
    session = Toolbox.load(cwd=".", host=Terminal()).session("default")
    messages = [{"role": "user", "content": task}]
    while True:
        catalogue = session.catalogue()  # again each turn: ToolSearch may have loaded tools
        reply = await client.messages.create(model=MODEL, max_tokens=4096, messages=messages,
                                             system=catalogue.deferred_text() or anthropic.omit,
                                             tools=catalogue.to_anthropic())
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                          for block in reply.content]})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            print("".join(block.text for block in reply.content if block.type == "text"))
            return
        results = await session.call_batch([(call.name, call.input, call.id) for call in calls])
        messages.append({"role": "user", "content": [result.to_anthropic(call.id)
                                                     for call, result in zip(calls, results)]})


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

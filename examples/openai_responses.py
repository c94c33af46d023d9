"""pegboard's tools in a loop on the OpenAI Responses API.

    pip install pegboard openai
    export OPENAI_API_KEY=...
    python openai_responses.py "What is in this folder?"

pegboard's permission engine decides every call; a call that needs
approval is put to you at the terminal.
"""

import asyncio
import os
import sys

import openai

from pegboard import Answer, Toolbox, hookimpl

MODEL = os.environ.get("MODEL", "gpt-5")


class Terminal:
    @hookimpl
    async def pegboard_ask(self, request, decision):
        reply = await asyncio.to_thread(input, f"{decision.reason}. Allow {request.tool.name}? [y/N] ")
        return Answer(allow=reply.strip().lower() == "y", message="The user said no.")


async def main(task: str) -> None:
    client = openai.AsyncOpenAI()  # OPENAI_API_KEY (and OPENAI_BASE_URL) from the environment
    session = Toolbox.load(cwd=".", host=Terminal()).session("default")
    items = [{"role": "user", "content": task}]
    while True:
        catalogue = session.catalogue()  # again each turn: ToolSearch may have loaded tools
        reply = await client.responses.create(model=MODEL, input=items, tools=catalogue.to_responses(strict=True),
                                              instructions=catalogue.deferred_text() or openai.omit)
        items += [item.model_dump(exclude_none=True) for item in reply.output]
        calls = [item for item in reply.output if item.type == "function_call"]
        if not calls:
            print(reply.output_text)
            return
        results = await session.call_batch([(call.name, call.arguments, call.call_id) for call in calls])
        items += [result.to_responses(call.call_id) for call, result in zip(calls, results)]


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is in this folder?"))

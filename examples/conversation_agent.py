"""A long conversation the model can still search after compaction.

    SESSION_ID=conv-42 python examples/conversation_agent.py "What did we decide about the database?"

The Anthropic Messages loop of examples/anthropic_messages.py, with a host
that provides what the conversation plugin's tools need: it records every
message of the durable session ``SESSION_ID`` (``ConversationLog``), so the session
resumed by a later run, in another process, still has them; it reports its
token counts (``pegboard_context_usage``: ContextCheck) and compacts when the
model asks (``pegboard_context_compact``: ContextCompact) or the window fills.
A compaction replaces the older messages by a summary the model writes; the
model then finds what the summary dropped with ConversationSearch and
ConversationRead. docs/plugins/conversation.md explains each step.
"""

import asyncio
import os
import sys

import anthropic

from pegboard import Answer, Toolbox, hookimpl
from pegboard.plugins.conversation import ContextUsage, ConversationLog

MODEL = os.environ.get("MODEL", "claude-sonnet-4-5")
WINDOW = 200_000      # the model's context window, in tokens
COMPACT_AT = 160_000  # compact by ourselves past this


class Host:
    def __init__(self) -> None:
        self.used = 0                  # tokens of the last request and its reply
        self.compactions = 0
        self.asked: tuple[str | None, bool] | None = None  # ContextCompact's (instructions, keep_recent)

    @hookimpl
    async def pegboard_ask(self, request, decision):
        reply = await asyncio.to_thread(input, f"{decision.reason}. Allow {request.tool.name}? [y/N] ")
        return Answer(allow=reply.strip().lower() == "y", message="The user said no.")

    @hookimpl
    def pegboard_context_usage(self, session):
        return ContextUsage(used_tokens=self.used, window_tokens=WINDOW, compact_at_tokens=COMPACT_AT,
                            compactions=self.compactions)

    @hookimpl
    def pegboard_context_compact(self, session, instructions, keep_recent):
        self.asked = (instructions, keep_recent)  # compacted once this batch's results are in
        return True


async def compact(client, log, session, messages, instructions, keep_recent):
    """The messages with the older ones replaced by the model's summary of them.
    keep_recent keeps the current turn (from its user message on) as it is."""
    starts = [i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str)]
    cut = starts[-1] if keep_recent and starts else len(messages)
    older, recent = messages[:cut], messages[cut:]
    if not older:
        return messages
    ask = ("Summarise our conversation so far for yourself: decisions, file names, open questions."
           + (f" {instructions}" if instructions else ""))
    last = older[-1]
    if last["role"] == "user":  # the tool results just given: the request goes in the same message
        request = [*older[:-1], {"role": "user", "content": [*last["content"], {"type": "text", "text": ask}]}]
    else:
        request = [*older, {"role": "user", "content": ask}]
    reply = await client.messages.create(model=MODEL, max_tokens=4096, messages=request)
    summary = ("[A summary of the conversation so far. The messages it replaces are still found by "
               "ConversationSearch and read by ConversationRead.]\n"
               + "".join(block.text for block in reply.content if block.type == "text"))
    if recent:
        first = {"role": "user", "content": f"{summary}\n\n{recent[0]['content']}"}
        recent = [first, *recent[1:]]
    else:
        recent = [{"role": "user", "content": f"{summary}\n\nCarry on from there."}]
    await log.arecord(session, recent[0])  # the log keeps every message the model was sent
    return recent


async def main(task: str) -> None:
    client = anthropic.AsyncAnthropic()  # ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL) from the environment
    host = Host()
    toolbox = Toolbox.load(cwd=".", host=host)
    log = ConversationLog(toolbox)
    session = toolbox.session("default", session_id=os.environ.get("SESSION_ID", "conversation-example"))
    if session.resumed:
        task = f"(This conversation was resumed: ConversationSearch finds what came before.)\n{task}"
    messages = [{"role": "user", "content": task}]
    await log.arecord(session, messages[0])
    while True:
        catalogue = session.catalogue()  # again each turn: ToolSearch may have loaded tools
        reply = await client.messages.create(model=MODEL, max_tokens=4096, messages=messages,
                                             system=catalogue.deferred_text() or anthropic.omit,
                                             tools=catalogue.to_anthropic())
        host.used = reply.usage.input_tokens + reply.usage.output_tokens
        messages.append({"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                                          for block in reply.content]})
        await log.arecord(session, messages[-1])
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            print("".join(block.text for block in reply.content if block.type == "text"))
            return
        results = await session.call_batch([(call.name, call.input, call.id) for call in calls])
        messages.append({"role": "user", "content": [result.to_anthropic(call.id)
                                                     for call, result in zip(calls, results)]})
        await log.arecord(session, messages[-1])
        if host.asked is not None or host.used > COMPACT_AT:
            instructions, keep_recent = host.asked or (None, True)
            compacted = await compact(client, log, session, messages, instructions, keep_recent)
            host.compactions += compacted is not messages  # (nothing older than this turn: nothing to do)
            messages, host.asked = compacted, None


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What did we decide about the database?"))

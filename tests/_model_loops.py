"""The examples' agent loops (docs/embedding.md), run in-process with the real
SDKs against a local model server (tests/_model_servers.py): the model's tool
calls go through a pegboard session until a reply has none."""

from __future__ import annotations

from typing import Any

from pegboard import Session, ToolResult

__all__ = ["run_loop"]


async def run_loop(api: str, url: str, session: Session, prompt: str | list[dict[str, Any]]) -> list[Any]:
    """Run the loop of ``api`` ("anthropic", "openai" for Chat Completions,
    "responses") from ``prompt`` (a task, or the messages to start from);
    the conversation at the end."""
    messages: list[Any] = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    if api == "anthropic":
        import anthropic

        client = anthropic.AsyncAnthropic(api_key="test-key", base_url=url)
        while True:
            reply = await client.messages.create(model="m", max_tokens=1000, messages=messages,
                                                 tools=session.catalogue().to_anthropic())
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            calls = [b for b in reply.content if b.type == "tool_use"]
            if not calls:
                return messages
            results = await session.call_batch([(c.name, c.input, c.id) for c in calls])
            messages.append({"role": "user", "content": [r.to_anthropic(c.id) for c, r in zip(calls, results)]})
    import openai

    oclient = openai.AsyncOpenAI(api_key="test-key", base_url=url)
    if api == "openai":
        while True:
            answer = await oclient.chat.completions.create(model="m", messages=messages,
                                                           tools=session.catalogue().to_openai(strict=True))
            message = answer.choices[0].message
            messages.append(message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True))
            if not message.tool_calls:
                return messages
            found = await session.call_batch([(c.function.name, c.function.arguments, c.id)
                                              for c in message.tool_calls])
            messages += ToolResult.openai_chat_messages([(c.id, r) for c, r in zip(message.tool_calls, found)])
    while True:
        response = await oclient.responses.create(model="m", input=messages,
                                                  tools=session.catalogue().to_responses(strict=True))
        messages += [item.model_dump(exclude_none=True) for item in response.output]
        fcalls = [item for item in response.output if item.type == "function_call"]
        if not fcalls:
            return messages
        done = await session.call_batch([(c.name, c.arguments, c.call_id) for c in fcalls])
        messages += [r.to_responses(c.call_id) for c, r in zip(fcalls, done)]

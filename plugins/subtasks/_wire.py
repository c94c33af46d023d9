"""The two APIs the reference runners speak, as requests built from the
conversation (``_run``'s format) and replies read back into it.

* Anthropic Messages API: ``POST {base_url}/v1/messages``.
* OpenAI Chat Completions (and servers compatible with it):
  ``POST {base_url}/chat/completions``.

Tool definitions come from ``Catalogue.to_anthropic()`` / ``to_openai()``
and tool results from ``ToolResult.to_anthropic()`` /
``ToolResult.openai_chat_messages()``: the core's converters, so a result's
images reach the model as each API takes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult

from ._run import result_of

if TYPE_CHECKING:
    from pegboard import Catalogue

__all__ = ["API", "ANTHROPIC", "Malformed", "OPENAI", "Reply"]

ANTHROPIC_VERSION = "2023-06-01"


class Malformed(Exception):
    """A reply that is not what the API promises; the message says what is wrong."""


@dataclass(frozen=True)
class Reply:
    text: str
    calls: list[dict[str, Any]]
    """Each ``{"id", "name", "input"}``; ``input`` is the raw string when it was not valid JSON."""
    stop: str


class API:
    name = ""

    def url(self, base_url: str) -> str:
        raise NotImplementedError

    def headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def body(self, model: str, system: str, messages: Sequence[dict[str, Any]], catalogue: Catalogue,
             max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: Any) -> Reply:
        raise NotImplementedError

    def error_message(self, data: Any) -> str:
        """The API's own words for a refused request."""
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type") or error.get("code")
            return f"{error['message']}" + (f" ({kind})" if kind else "")
        return json.dumps(data)[:300]


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise Malformed(f"{what} is not a JSON object")
    return data


class _Anthropic(API):
    name = "anthropic"

    def url(self, base_url: str) -> str:
        return f"{base_url}/v1/messages"

    def headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}

    def body(self, model: str, system: str, messages: Sequence[dict[str, Any]], catalogue: Catalogue,
             max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "system": system,
                                "messages": self.messages(messages)}
        tools = catalogue.to_anthropic()
        if tools:
            body["tools"] = tools
        return body

    def messages(self, conversation: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in conversation:
            role = message.get("role")
            if role == "user":
                blocks: list[dict[str, Any]] = [{"type": "text", "text": str(message.get("content") or " ")}]
            elif role == "assistant":
                blocks = [{"type": "text", "text": message["content"]}] if message.get("content") else []
                for call in message.get("tool_calls") or ():
                    given = call["input"]
                    blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"],
                                   "input": given if isinstance(given, dict) else {}})
                if not blocks:
                    blocks = [{"type": "text", "text": "(no reply)"}]
            elif role == "tool":
                blocks = [result_of(entry).to_anthropic(entry["id"]) for entry in message.get("results", ())]
                role = "user"
            else:
                continue
            # Tool results and the text after them are one user turn: the API
            # wants the roles to alternate.
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": role, "content": blocks})
        return out

    def parse(self, data: Any) -> Reply:
        data = _object(data, "the reply")
        content = data.get("content")
        if data.get("type") != "message" or not isinstance(content, list):
            raise Malformed("the reply is not a message with a content list")
        texts, calls = [], []
        for block in content:
            block = _object(block, "a content block")
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str) \
                        or not isinstance(block.get("input"), dict):
                    raise Malformed("a tool_use block lacks its id, name or input")
                calls.append({"id": block["id"], "name": block["name"], "input": block["input"]})
        return Reply("\n".join(t for t in texts if t), calls, str(data.get("stop_reason") or ""))


class _OpenAI(API):
    name = "openai"

    def url(self, base_url: str) -> str:
        return f"{base_url}/chat/completions"

    def headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}", "content-type": "application/json"}

    def body(self, model: str, system: str, messages: Sequence[dict[str, Any]], catalogue: Catalogue,
             max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "max_completion_tokens": max_tokens,
                                "messages": [{"role": "system", "content": system}, *self.messages(messages)]}
        tools = catalogue.to_openai()
        if tools:
            body["tools"] = tools
        return body

    def messages(self, conversation: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in conversation:
            role = message.get("role")
            if role == "user":
                out.append({"role": "user", "content": str(message.get("content") or "")})
            elif role == "assistant":
                entry: dict[str, Any] = {"role": "assistant", "content": message.get("content") or None}
                calls = message.get("tool_calls") or ()
                if calls:
                    entry["tool_calls"] = [
                        {"id": c["id"], "type": "function",
                         "function": {"name": c["name"], "arguments": c["input"] if isinstance(c["input"], str)
                                      else json.dumps(c["input"])}} for c in calls]
                out.append(entry)
            elif role == "tool":
                out.extend(ToolResult.openai_chat_messages(
                    (entry["id"], result_of(entry)) for entry in message.get("results", ())))
        return out

    def parse(self, data: Any) -> Reply:
        data = _object(data, "the reply")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise Malformed("the reply has no choices")
        choice = _object(choices[0], "the first choice")
        message = _object(choice.get("message"), "the choice's message")
        text = message.get("content")
        if text is not None and not isinstance(text, str):
            raise Malformed("the message's content is not a string")
        calls = []
        for call in message.get("tool_calls") or ():
            call = _object(call, "a tool call")
            function = _object(call.get("function"), "a tool call's function")
            if not isinstance(call.get("id"), str) or not isinstance(function.get("name"), str):
                raise Malformed("a tool call lacks its id or function name")
            raw = function.get("arguments") or "{}"
            try:
                given: Any = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                given = raw  # the pipeline tells the model its arguments are not JSON
            calls.append({"id": call["id"], "name": function["name"], "input": given})
        return Reply(text or "", calls, str(choice.get("finish_reason") or ""))


ANTHROPIC = _Anthropic()
OPENAI = _OpenAI()

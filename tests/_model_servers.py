"""Local HTTP servers that speak the Anthropic Messages API (plain and
streamed, the beta endpoint included), the OpenAI Chat Completions API and the
OpenAI Responses API exactly, for the reference runners' tests, the adapters'
and the examples' (tests/docs/test_examples.py).

A server answers each request with the next step of its script. Every
request it gets is checked against the official SDK's request types, and
every reply it sends against the SDK's response types, so a test passing
here means the runner's payloads are the real APIs' (tests/_sdk_types.py
walks the SDKs' TypedDicts all the way down).

``model_server(api, steps)``: api is "anthropic", "openai" (Chat
Completions) or "responses". Steps: ``say(text)``, ``use(("Tool", {...}), ...)`` (tool calls, with
optional text), ``status(429, retry_after="0")``, ``status(500)``,
``garbage()``; or any callable of the request's JSON returning
``(status, headers, body)``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _sdk_types import problems

__all__ = ["ModelServer", "garbage", "model_server", "say", "status", "use"]

Step = Callable[["ModelServer", dict[str, Any]], tuple[int, dict[str, str], bytes]]
_ids = itertools.count(1)


def say(text: str) -> Step:
    return lambda server, request: server.reply(request, text, [])


def use(*calls: tuple[str, Any], text: str = "") -> Step:
    return lambda server, request: server.reply(request, text, list(calls))


def status(code: int, *, retry_after: str | None = None, message: str = "try later") -> Step:
    def step(server: ModelServer, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        headers = {"retry-after": retry_after} if retry_after is not None else {}
        return code, headers, json.dumps(server.error_body(code, message)).encode()
    return step


def garbage() -> Step:
    return lambda server, request: (200, {}, b"{\"this is\": not json")


class ModelServer:
    def __init__(self, api: str, steps: list[Step]):
        self.api = api
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.gate: threading.Event | None = None
        """When set, each request waits for it (to hold a run mid-request)."""
        self.waiting = threading.Event()
        self.route: Callable[[dict[str, Any]], Step] | None = None
        """When set, picks each request's step from the request (for runs side by side)."""
        self.url = ""

    # --- the wire formats ---------------------------------------------------

    def reply(self, request: dict[str, Any], text: str, calls: list[tuple[str, Any]]) -> tuple[int, dict[str, str],
                                                                                              bytes]:
        model = request.get("model", "m")
        if self.api == "anthropic" and request.get("stream"):
            return self._stream_anthropic(model, text, calls)
        if self.api == "responses":
            output: list[dict[str, Any]] = [
                {"type": "function_call", "id": f"fc_{next(_ids):04d}", "call_id": f"call_{next(_ids):04d}",
                 "name": name, "arguments": args if isinstance(args, str) else json.dumps(args),
                 "status": "completed"} for name, args in calls]
            if text or not calls:
                output.insert(0, {"type": "message", "id": f"msg_{next(_ids):04d}", "role": "assistant",
                                  "status": "completed",
                                  "content": [{"type": "output_text", "text": text, "annotations": []}]})
            body = {"id": f"resp_{next(_ids):04d}", "object": "response", "created_at": 1_700_000_000,
                    "model": model, "status": "completed", "output": output, "parallel_tool_calls": True,
                    "tool_choice": request.get("tool_choice", "auto"), "tools": request.get("tools", []),
                    "error": None, "incomplete_details": None, "instructions": request.get("instructions"),
                    "metadata": {}, "temperature": 1.0, "top_p": 1.0,
                    "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                              "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
            self._check_reply("openai.types.responses:Response", body)
            return 200, {}, json.dumps(body).encode()
        if self.api == "anthropic":
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            content += [{"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": args}
                        for name, args in calls]
            body: dict[str, Any] = {
                "id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5}}
            self._check_reply("anthropic.types:Message", body)
        else:
            message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
            if calls:
                message["tool_calls"] = [
                    {"id": f"call_{next(_ids):04d}", "type": "function",
                     "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                    for name, args in calls]
            body = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion", "created": 1_700_000_000,
                    "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                                 "finish_reason": "tool_calls" if calls else "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
            self._check_reply("openai.types.chat:ChatCompletion", body)
        return 200, {}, json.dumps(body).encode()

    def _stream_anthropic(self, model: str, text: str, calls: list[tuple[str, Any]]) -> tuple[int, dict[str, str],
                                                                                              bytes]:
        """The reply as the Messages API streams it (server-sent events), each
        event checked against the SDK's RawMessageStreamEvent."""
        from pydantic import TypeAdapter

        from anthropic.types import RawMessageStreamEvent

        start = {"id": f"msg_{next(_ids):04d}", "type": "message", "role": "assistant", "model": model,
                 "content": [], "stop_reason": None, "stop_sequence": None,
                 "usage": {"input_tokens": 10, "output_tokens": 1}}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if text:
            blocks.append(({"type": "text", "text": ""}, {"type": "text_delta", "text": text}))
        for name, args in calls:
            blocks.append(({"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": {}},
                           {"type": "input_json_delta",
                            "partial_json": args if isinstance(args, str) else json.dumps(args)}))
        for index, (block, delta) in enumerate(blocks):
            events += [{"type": "content_block_start", "index": index, "content_block": block},
                       {"type": "content_block_delta", "index": index, "delta": delta},
                       {"type": "content_block_stop", "index": index}]
        events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use" if calls else "end_turn",
                                                       "stop_sequence": None},
                    "usage": {"output_tokens": 5}},
                   {"type": "message_stop"}]
        checker: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
        for event in events:
            checker.validate_python(event)
        payload = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return 200, {"content-type": "text/event-stream"}, payload.encode()

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        if self.api == "anthropic":
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(code, "api_error")
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": "server_error" if code >= 500 else "requests",
                          "param": None, "code": None}}

    def _check_reply(self, where: str, body: dict[str, Any]) -> None:
        module, _, name = where.partition(":")
        kind = getattr(__import__(module, fromlist=[name]), name)
        kind.model_validate(body)

    def check_request(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        """The request as the SDK's own types define it."""
        params: Any
        if self.api == "anthropic":
            # The beta endpoint (``?beta=true``, as Claude Code calls it) takes the beta params.
            if path == "/v1/messages?beta=true":
                from anthropic.types.beta import message_create_params as beta_params

                params = beta_params.MessageCreateParamsStreaming if body.get("stream") else \
                    beta_params.MessageCreateParamsNonStreaming
                path = "/v1/messages"
            else:
                from anthropic.types import message_create_params

                params = message_create_params.MessageCreateParamsStreaming if body.get("stream") else \
                    message_create_params.MessageCreateParamsNonStreaming
            # The key as x-api-key (the API's documented header) or as a bearer token (newer SDKs);
            # some dated anthropic-version always.
            expected_path = "/v1/messages"
            auth = headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ")
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", headers.get("anthropic-version", "")):
                self.problems.append("no anthropic-version header")
        elif self.api == "responses":
            from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

            params = ResponseCreateParamsNonStreaming
            expected_path = "/v1/responses"
            auth = (headers.get("authorization") or "").removeprefix("Bearer ")
        else:
            from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

            params = CompletionCreateParamsNonStreaming
            expected_path = "/v1/chat/completions"
            auth = (headers.get("authorization") or "").removeprefix("Bearer ")
        if path != expected_path:
            self.problems.append(f"path {path}")
        if auth != "test-key":
            self.problems.append(f"credentials {auth!r}")
        self.problems.extend(problems(params, body))
        if self.api == "openai":
            self.problems.extend(_unanswered_tool_calls(body.get("messages", [])))
        if self.api == "anthropic":
            self.problems.extend(_unanswered_tool_uses(body.get("messages", [])))
        if self.api == "responses" and isinstance(body.get("input"), list):
            items = [i for i in body["input"] if isinstance(i, dict)]
            outputs = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
            self.problems.extend(f"function call {i.get('call_id')} has no function_call_output"
                                 for i in items if i.get("type") == "function_call" and i.get("call_id") not in outputs)
        if self.api == "anthropic":
            roles = [m.get("role") for m in body.get("messages", [])]
            if any(a == b for a, b in zip(roles, roles[1:])) or (roles and roles[0] != "user"):
                self.problems.append(f"roles do not alternate from user: {roles}")

    # --- serving --------------------------------------------------------------

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            self.check_request(path, headers, body)
            if self.route is not None:
                step = self.route(body)
            else:
                step = self.steps.pop(0) if self.steps else say("(the script has ended)")
        if self.gate is not None:
            self.waiting.set()
            self.gate.wait(30)
        return step(self, body)


def _unanswered_tool_calls(messages: list[Any]) -> list[str]:
    """Chat Completions' rule: an assistant message's tool calls are answered
    by tool messages, one per call id, before any other message."""
    found = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        wanted = {call.get("id") for call in message["tool_calls"]}
        after = messages[index + 1:]
        answers = []
        for other in after:
            if not isinstance(other, dict) or other.get("role") != "tool":
                break
            answers.append(other.get("tool_call_id"))
        if after and set(answers) != wanted:
            found.append(f"messages[{index}]: tool calls {sorted(map(str, wanted))} answered by "
                         f"{answers} before the next message")
    return found


def _unanswered_tool_uses(messages: list[Any]) -> list[str]:
    """The Messages API's rule: the user message after an assistant's tool_use
    blocks opens with a tool_result for each of them."""
    found = []
    for index, message in enumerate(messages[:-1]):
        content = message.get("content") if isinstance(message, dict) else None
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        wanted = {b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"}
        if not wanted:
            continue
        reply = messages[index + 1].get("content")
        blocks = reply if isinstance(reply, list) else []
        leading = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                break
            leading.append(block.get("tool_use_id"))
        if set(leading) != wanted:
            found.append(f"messages[{index + 1}]: tool_use {sorted(map(str, wanted))} answered by {leading} "
                         "at the start of the next user message")
    return found


class _Handler(BaseHTTPRequestHandler):
    server_version = "model-server/1"
    model: ModelServer

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unreadable": raw.decode(errors="replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        code, extra, payload = self.model.answer(self.path, headers, body)
        self.send_response(code)
        self.send_header("content-type", extra.pop("content-type", "application/json"))
        self.send_header("content-length", str(len(payload)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def model_server(api: str, steps: list[Step]) -> Iterator[ModelServer]:
    model = ModelServer(api, steps)
    handler = type("Handler", (_Handler,), {"model": model})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    model.url = f"http://{host}:{port}" + ("/v1" if api in ("openai", "responses") else "")
    try:
        yield model
    finally:
        if model.gate is not None:
            model.gate.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)

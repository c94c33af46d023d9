"""Local HTTP servers that speak the Anthropic Messages API and the OpenAI
Chat Completions API exactly, for the reference runners' tests.

A server answers each request with the next step of its script. Every
request it gets is checked against the official SDK's request types, and
every reply it sends against the SDK's response types, so a test passing
here means the runner's payloads are the real APIs' (tests/_sdk_types.py
walks the SDKs' TypedDicts all the way down).

Steps: ``say(text)``, ``use(("Tool", {...}), ...)`` (tool calls, with
optional text), ``status(429, retry_after="0")``, ``status(500)``,
``garbage()``; or any callable of the request's JSON returning
``(status, headers, body)``.
"""

from __future__ import annotations

import itertools
import json
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
        if self.api == "anthropic":
            from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as Params

            expected_path, auth = "/v1/messages", headers.get("x-api-key")
            if headers.get("anthropic-version") != "2023-06-01":
                self.problems.append("no anthropic-version header")
        else:
            from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as Params

            expected_path = "/v1/chat/completions"
            auth = (headers.get("authorization") or "").removeprefix("Bearer ")
        if path != expected_path:
            self.problems.append(f"path {path}")
        if auth != "test-key":
            self.problems.append(f"credentials {auth!r}")
        self.problems.extend(problems(Params, body))
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
        self.send_header("content-type", "application/json")
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
    model.url = f"http://{host}:{port}" + ("/v1" if api == "openai" else "")
    try:
        yield model
    finally:
        if model.gate is not None:
            model.gate.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)

"""A small HTTP proxy on 127.0.0.1 that sends each request to the next of
its backends in turn, as a round-robin load balancer does, streaming the
answer back (server-sent events included). A backend that refuses the
connection is skipped for the next one (a balancer's retry on connect
errors); the Host header is the backend's own, as nginx sends by default.
Runs uvicorn in a thread of its own, so sync and async tests can use it."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from typing import Any

import httpx
import uvicorn

HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"trailer", b"upgrade", b"host",
              b"content-length", b"proxy-authorization", b"proxy-connection"}


class AlternatingProxy:
    def __init__(self, backends: list[str]):
        self.backends = [b.rstrip("/") for b in backends]
        self.sent: Counter[str] = Counter()
        self._next = 0
        self._http: httpx.AsyncClient | None = None
        self._lock = threading.Lock()
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as serve's own socket (no delayed-ACK waits)
        sock.bind(("127.0.0.1", 0))
        self._sock = sock
        self.base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(self._app, log_level="warning", lifespan="off", interface="asgi3"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self) -> AlternatingProxy:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True  # its connections to the backends close with its loop
        self._thread.join(10)
        self._sock.close()

    def _pick(self) -> list[str]:
        with self._lock:
            start = self._next
            self._next += 1
        return [self.backends[(start + i) % len(self.backends)] for i in range(len(self.backends))]

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP]
        target = scope["path"] + (f"?{scope['query_string'].decode()}" if scope.get("query_string") else "")
        if self._http is None:  # made on the proxy's own loop; kept, so connections to backends are reused
            transport = httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None), transport=transport)
        http = self._http
        for backend in self._pick():
            request = http.build_request(scope["method"], backend + target, headers=headers, content=body)
            try:
                response = await http.send(request, stream=True)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                continue  # that backend is down: the next one
            self.sent[backend] += 1
            try:
                await send({"type": "http.response.start", "status": response.status_code, "headers": [
                    (k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]})
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except (httpx.ReadError, httpx.RemoteProtocolError):
                pass  # the backend died mid-answer: the client sees the answer end
            finally:
                await response.aclose()
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 502, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"no backend answered\n"})

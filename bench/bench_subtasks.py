"""What sub-agents cost on top of the work they do.

    .venv/bin/python bench/bench_subtasks.py

1. Making a child session (``Session.child``, narrowed: a mode, hidden
   tools) and running one no-op call in it, against the same call in the
   parent (target: at most 3x).
2. One no-op call in an existing child, against the same call in the parent:
   what the narrowing costs per call (target: at most 1.2x).
3. A whole Agent call whose host runs the child's one no-op call, against
   that call in the parent: the spawn's records, terms, definitions and
   report, for information.
4. The reference runner's overhead per model turn (each turn: the child's
   catalogue and conversation sent, the reply read, its no-op call run
   through the child's session, the conversation kept), against a bare
   httpx POST of the same request to the same local server, which runs in
   a process of its own (target: at most 1.5x); and, for information, the
   part of a turn spent outside the request.

Both figures of each pair are measured in alternating rounds, so a busy
machine weighs on both alike; the ratio is the median round's.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import statistics
import sys
import subprocess
import tempfile
import textwrap
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import Ratio, from_rounds, report  # noqa: E402

PLUGIN = '''
from pydantic import BaseModel, Field
from pegboard import Tool, hookimpl

class NoopIn(BaseModel):
    text: str = Field(description="Some text.")

async def noop(args, ctx):
    return "ok"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Noop", handler=noop, input_model=NoopIn, read_only=True, permission="read"))
'''
ARGS = {"text": "hello"}
TURNS = 8


class Host:
    """Runs each child as a model would that makes one no-op call."""

    from pegboard import hookimpl

    @hookimpl
    async def pegboard_run_subagent(self, run: Any) -> str:
        await run.session.call("Noop", ARGS)
        return "done"


def setup(tmp: Path) -> Path:
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(tmp / "no-policy.toml")
    site = tmp / "site"
    dist = site / "benchsub-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: benchsub\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pegboard]\nbenchsub = benchsub_plugin\n")
    (site / "benchsub_plugin.py").write_text(textwrap.dedent(PLUGIN))
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    project = tmp / "project"
    project.mkdir()
    return project


async def per_call_us(fn: Any, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        await fn()
    return (time.perf_counter() - start) / rounds * 1e6


# --- a local Anthropic Messages API --------------------------------------------------


def reply_body(request: dict[str, Any]) -> bytes:
    turns = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if turns + 1 < TURNS:
        content = [{"type": "tool_use", "id": f"toolu_{turns}", "name": "Noop", "input": ARGS}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": "all done"}], "end_turn"
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": request["model"],
                       "content": content, "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real APIs

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle and
        # delayed ACKs add 40 ms to every reply and hide what is measured.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802
        body = reply_body(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def runner_rounds(project: Path, url: str) -> list[tuple[float, float, float, float]]:
    import httpx

    from pegboard import Toolbox

    config = Path(os.environ["XDG_CONFIG_HOME"]) / "pegboard" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[plugins.subtasks]\nrunner = "anthropic"\nmodel = "m"\nbase_url = "{url}"\n')
    os.environ["ANTHROPIC_API_KEY"] = "k"
    toolbox = Toolbox.load(cwd=project, plugins=["benchsub", "fs", "subtasks"])
    session = toolbox.session("default")
    captured: list[dict[str, Any]] = []
    from pegboard.plugins.subtasks import _runner

    # Time spent in the model request itself, to tell the runner's own work apart.
    requests = [0.0]
    send = _runner.send

    async def timed_send(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await send(*args, **kwargs)
        finally:
            requests[0] += time.perf_counter() - start

    _runner.send = timed_send  # type: ignore[assignment]
    rounds = []
    async with httpx.AsyncClient() as client:
        for index in range(9):
            requests[0] = 0.0
            start = time.perf_counter()
            result = await session.call("Agent", {"description": "bench", "prompt": "go", "run_in_background": False})
            per_turn = (time.perf_counter() - start) / TURNS
            own = per_turn - requests[0] / TURNS
            assert result.text_content().endswith("all done"), result.text_content()
            if not captured:
                # The request the runner sends at its last turn, for the bare POSTs.
                from pegboard.plugins.subtasks._wire import ANTHROPIC

                child = toolbox.session("default").child(label="x")
                messages = [{"role": "user", "content": "go"}]
                for turn in range(TURNS - 1):
                    messages.append({"role": "assistant", "content": "",
                                     "tool_calls": [{"id": f"toolu_{turn}", "name": "Noop", "input": ARGS}]})
                    messages.append({"role": "tool", "results": [{"id": f"toolu_{turn}", "name": "Noop",
                                                                  "result": {"content": [{"type": "text",
                                                                                          "text": "ok"}]}}]})
                captured.append(ANTHROPIC.body("m", "system", messages, child.catalogue(), 8192))
            start = time.perf_counter()
            for _ in range(TURNS):
                response = await client.post(f"{url}/v1/messages", json=captured[0],
                                             headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
                response.json()
            bare = (time.perf_counter() - start) / TURNS
            if index:  # the first round warms imports and the connection
                rounds.append((per_turn / bare, per_turn, bare, own))
    await session.aclose()
    _runner.send = send  # type: ignore[assignment]
    return rounds


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = setup(Path(os.path.realpath(tmp)))
        from pegboard import Toolbox

        toolbox = Toolbox.load(cwd=project, plugins=["benchsub", "fs", "subtasks"], host=Host())
        parent = toolbox.session("default")
        await parent.call("Noop", ARGS)
        existing = parent.child(mode="plan", hide=["Write", "Bash"])
        await existing.call("Noop", ARGS)

        async def spawn_and_call() -> None:
            child = parent.child(mode="plan", hide=["Write", "Bash"], label="bench")
            await child.call("Noop", ARGS)

        async def agent_call() -> None:
            await parent.call("Agent", {"description": "bench", "prompt": "go", "run_in_background": False})

        spawn, narrow, agent = [], [], []
        for _ in range(9):
            base = await per_call_us(lambda: parent.call("Noop", ARGS), 2_000)
            spawned = await per_call_us(spawn_and_call, 2_000)
            in_child = await per_call_us(lambda: existing.call("Noop", ARGS), 2_000)
            base2 = await per_call_us(lambda: parent.call("Noop", ARGS), 2_000)
            full = await per_call_us(agent_call, 100)
            mean = (base + base2) / 2
            spawn.append(spawned / mean)
            narrow.append(in_child / mean)
            agent.append(full / mean)
        print(f"one no-op call in the parent:              {mean:8.1f} µs")
        print(f"child session made + the call in it:       {statistics.median(spawn) * mean:8.1f} µs")
        print(f"the call in an existing child:             {statistics.median(narrow) * mean:8.1f} µs")
        print(f"a whole Agent call (host runs the call):   {statistics.median(agent) * mean:8.1f} µs")
        await parent.aclose()

        # The model server runs in a process of its own, as a real one would:
        # in this process it would take the GIL from what is measured.
        server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            rounds = await runner_rounds(project, f"http://127.0.0.1:{port}")
        finally:
            server.terminate()
            server.wait(10)
        ratio, per_turn, bare, own = sorted(rounds)[len(rounds) // 2]
        print(f"reference runner, per model turn:          {per_turn * 1e3:8.2f} ms")
        print(f"  of which its own work, outside the request: {own * 1e3:5.2f} ms")
        print(f"bare httpx POST of the same request:       {bare * 1e3:8.2f} ms")
        report(
            from_rounds("child session made + one no-op call in it / the call in the parent", spawn, 3.0),
            from_rounds("one no-op call in a child / the call in the parent", narrow, 1.2),
            from_rounds("a whole Agent call whose host makes one no-op call / the call in the parent", agent, 0,
                        bound="info"),
            from_rounds(f"reference runner per model turn ({TURNS} turns) / a bare httpx POST of the same request",
                        [r[0] for r in rounds], 1.5),
            from_rounds("the runner's own work per turn, outside the request / a bare httpx POST",
                        [r[3] / r[2] for r in rounds], 0, bound="info"),
        )
    return 0


def serve() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    sys.exit(asyncio.run(main()))

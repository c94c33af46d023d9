"""``pegboard serve`` on stdio owns its stdout and answers every line
(issue 30, items 2 and 6): what a plugin prints at import goes to stderr,
and a line that cannot be read gets a JSON-RPC error, never silence."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pegboard.testing import PegboardEnv

PEGBOARD = Path(sys.executable).parent / "pegboard"

FORGED = '{"jsonrpc":"2.0","id":1,"result":{}}'
NOISY_PLUGIN = f'''
import os
print({FORGED!r})                       # through sys.stdout
os.write(1, b'{FORGED}\\n')  # and straight to fd 1, as a C library or a child would
'''


def child_env() -> dict[str, str]:
    keys = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "PEGBOARD_POLICY", "HOME")
    return {**os.environ, **{k: os.environ[k] for k in keys if k in os.environ}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("first line\n")
    return root


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_plugin_printing_at_import_cannot_forge_a_message(pegboard_env: PegboardEnv, project: Path,
                                                                  tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    pegboard_env.local_plugin("noisy", NOISY_PLUGIN)
    params = StdioServerParameters(command=str(PEGBOARD), args=["serve", "--cwd", str(project)], env=child_env())
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "Read" in names
            read = await client.call_tool("Read", {"file_path": str(project / "notes.txt")})
            assert "first line" in read.content[0].text
    assert errors.read_text().count(FORGED) == 2, errors.read_text()


class Wire:
    """A raw ``pegboard serve`` subprocess: lines in, answers out, each read with a deadline."""

    def __init__(self, project: Path) -> None:
        self.proc = subprocess.Popen([str(PEGBOARD), "serve", "--cwd", str(project)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=child_env())
        self.answers: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, limit_s: float = 60.0) -> dict[str, Any]:
        try:
            return dict(json.loads(self.answers.get(timeout=limit_s)))
        except queue.Empty:
            raise AssertionError("pegboard serve did not answer") from None

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def request(id_: int | str, method: str, params: dict[str, Any] | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, **({"params": params} if params else {})})


@pytest.mark.slow
def test_every_line_is_answered_even_one_that_cannot_be_read(project: Path) -> None:
    wire = Wire(project)
    try:
        wire.send(request(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                            "clientInfo": {"name": "raw", "version": "1"}}))
        assert wire.answer()["result"]["serverInfo"]["name"] == "pegboard"
        wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        depth = 100_000
        deep = '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"Read","arguments":{"x":' \
            + "[" * depth + "]" * depth + "}}}"
        wire.send(deep)
        answer = wire.answer()
        assert answer["id"] == 5 and answer["error"]["code"] == -32700, answer

        wire.send("this is not JSON")
        answer = wire.answer()
        assert answer["id"] is None and answer["error"]["code"] == -32700, answer

        wire.send('{"jsonrpc": "2.0", "id": 7, "method": 5}')  # JSON, but no JSON-RPC message
        answer = wire.answer()
        assert answer["id"] == 7 and answer["error"]["code"] == -32600, answer

        wire.send("[1, 2]")
        answer = wire.answer()
        assert answer["id"] is None and answer["error"]["code"] == -32600, answer

        # and the connection still serves
        wire.send(request(8, "tools/list"))
        answer = wire.answer()
        assert answer["id"] == 8 and any(t["name"] == "Read" for t in answer["result"]["tools"])
    finally:
        wire.close()


@pytest.mark.parametrize(("text", "expected"), [
    ('{"id": 4, "params": {"id": 3}}', 4),
    ('{"params": {"id": 3, "s": "}{\\"id\\": 9"}, "id": "abc"}', "abc"),
    ('{"method": "x", "params": [[[[' + "[" * 50_000, None),   # broken and deep, no id at the top
    ('{"params": ' + "[" * 50_000 + "]" * 50_000 + ', "id": 12}', 12),
    ('{"id": true}', None),
    ('[{"id": 1}]', None),
    ("not json", None),
])
def test_the_id_is_found_at_the_top_level_only(text: str, expected: object) -> None:
    from pegboard.plugins.mcp._serve_stdio import top_level_id

    assert top_level_id(text) == expected

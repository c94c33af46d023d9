"""Two processes editing the same memory at once lose nothing: every
str_replace and insert of both lands (or is refused with its reason, never
written over), on SQLite and the real PostgreSQL; and ``pegboard call``
reaches the same memories from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pegboard import Toolbox

pytestmark = pytest.mark.slow

EDITS = 30

WRITER = textwrap.dedent("""
    import asyncio, json, os, sys, time
    from pegboard import Toolbox

    me, root, start = sys.argv[1], sys.argv[2], sys.argv[3]

    async def main():
        session = Toolbox.load(cwd=root, plugins=["memory"]).session("default")
        while not os.path.exists(start):  # both begin together
            time.sleep(0.01)
        failed = []
        for i in range(int(sys.argv[4])):
            for args in ({"command": "str_replace", "path": "/memories/shared.md",
                          "old_str": f"todo-{me}-{i}\\n", "new_str": f"done-{me}-{i}\\n"},
                         {"command": "insert", "path": "/memories/shared.md", "insert_line": 1,
                          "insert_text": f"added-{me}-{i}"}):
                result = await session.call("memory", args)
                if result.is_error:
                    failed.append(result.text_content())
        print(json.dumps(failed))

    asyncio.run(main())
""")


def test_two_processes_editing_one_memory_lose_nothing(tmp_path: Path, store_url: str) -> None:
    import anyio

    lines = ["# shared"] + [f"todo-{who}-{i}" for i in range(EDITS) for who in "ab"]

    async def seed() -> None:
        session = Toolbox.load(cwd=tmp_path, plugins=["memory"]).session("default")
        result = await session.call("memory", {"command": "create", "path": "/memories/shared.md",
                                               "file_text": "\n".join(lines) + "\n"})
        assert not result.is_error, result.text_content()

    anyio.run(seed)
    start = tmp_path / "go"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, who, str(tmp_path), str(start), str(EDITS)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
               for who in "ab"]
    time.sleep(1.0)  # both loaded and waiting (a late one only makes the test weaker, never wrong)
    start.touch()
    outputs = [w.communicate(timeout=300) for w in writers]
    for writer, (out, err) in zip(writers, outputs):
        assert writer.returncode == 0, err
        assert json.loads(out) == [], out  # nothing refused: each edit was applied to what the other left

    async def final() -> str:
        session = Toolbox.load(cwd=tmp_path, plugins=["memory"]).session("default")
        return (await session.call("memory", {"command": "view", "path": "/memories/shared.md"})).text_content()

    text = anyio.run(final)
    body = [line.split("\t", 1)[1] for line in text.splitlines()[1:]]
    assert body[0] == "# shared"
    for who in "ab":
        for i in range(EDITS):
            assert f"done-{who}-{i}" in body, (who, i)
            assert f"added-{who}-{i}" in body, (who, i)
    assert not [line for line in body if line.startswith("todo-")]
    assert len(body) == 1 + 4 * EDITS


def test_pegboard_call_in_another_process_sees_the_same_memories(tmp_path: Path) -> None:
    pegboard = str(Path(sys.executable).parent / "pegboard")

    def call(payload: dict[str, object]) -> dict[str, object]:
        done = subprocess.run([pegboard, "call", "memory", "--input", json.dumps(payload), "--json", "--cwd",
                               str(tmp_path)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PEGBOARD_PLUGINS": "memory"})
        assert done.returncode == 0, done.stderr
        result: dict[str, object] = json.loads(done.stdout)
        return result

    call({"command": "create", "path": "/memories/from-one.md", "file_text": "made by the first process"})
    shown = json.dumps(call({"command": "view", "path": "/memories/from-one.md"}))
    assert "made by the first process" in shown

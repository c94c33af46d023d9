"""Embedding pegboard in an agent loop: one turn, end to end, with a fake model.

    python examples/embed_batch.py

Loads the toolbox (the fs plugin if it is installed, else only the core's own
tools), builds the catalogue in the Anthropic Messages API format, takes a
hard-coded assistant message with ``tool_use`` blocks as if a model had sent
it, runs its calls as one batch, and prints the ``tool_result`` blocks that
would go back to the model in the next user message.

Everything happens in a temporary project directory, so the example touches
none of your files.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from pegboard import Session, Toolbox, hookimpl


class Host:
    """The embedding application. pegboard calls it for events (background
    results, notes, tool notifications); a real host would also implement
    ``pegboard_ask`` to put permission questions to a person."""

    @hookimpl
    def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
        print(f"[host event] {kind}: {json.dumps(data, default=str)[:120]}")


def fake_model_reply(project: Path, have_fs: bool) -> dict[str, Any]:
    """What a model might answer, in the Anthropic Messages API shape."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": "Let me look around first."}]
    if have_fs:
        notes = str(project / "notes.md")
        blocks += [
            {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": notes}},
            {"type": "tool_use", "id": "toolu_02", "name": "Glob", "input": {"pattern": "**/*.md"}},
            # Saved to the scratchpad instead of being returned inline.
            {"type": "tool_use", "id": "toolu_03", "name": "Read",
             "input": {"file_path": notes, "scratchpad": "notes"}},
            {"type": "tool_use", "id": "toolu_04", "name": "ScratchpadRead", "input": {"name": "notes"}},
            # Not read-only: it runs alone, after the reads before it. Headless, it
            # needs an approval no one is there to give, so the model is told how
            # to get it allowed.
            {"type": "tool_use", "id": "toolu_05", "name": "Write",
             "input": {"file_path": str(project / "summary.md"), "content": "# Summary\n"}},
        ]
    blocks += [
        {"type": "tool_use", "id": "toolu_06", "name": "ScratchpadList", "input": {}},
        {"type": "tool_use", "id": "toolu_07", "name": "TaskList", "input": {}},
        # Mistakes come back as error results the model can act on.
        {"type": "tool_use", "id": "toolu_08", "name": "ScratchpadRead", "input": {"name": 42}},
        {"type": "tool_use", "id": "toolu_09", "name": "Raed", "input": {}},
    ]
    return {"role": "assistant", "content": blocks}


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "notes.md").write_text("# Notes\n\nThe build uses make.\nTests: make test.\n")
        (project / "docs").mkdir()
        (project / "docs" / "guide.md").write_text("# Guide\n")

        # plugins=["fs"]: only the fs plugin (if installed); the core's tools are always there.
        toolbox = Toolbox.load(cwd=project, plugins=["fs"], host=Host())
        have_fs = "Read" in toolbox.tools
        async with toolbox.session(mode="default") as session:
            catalogue = session.catalogue()
            tools = catalogue.to_anthropic()  # pass as `tools=` to client.messages.create
            print(f"catalogue: {len(tools)} tools with schemas: {', '.join(t['name'] for t in tools)}")
            if catalogue.deferred:
                print(catalogue.deferred_text())  # goes into the system prompt

            reply = fake_model_reply(project, have_fs)
            uses = [b for b in reply["content"] if b["type"] == "tool_use"]
            results = await session.call_batch([(u["name"], u["input"], u["id"]) for u in uses])

            next_message = {"role": "user",
                            "content": [r.to_anthropic(u["id"]) for u, r in zip(uses, results)]}
            print(json.dumps(next_message, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

"""A host whose person answers elsewhere, run as its own process by the
approvals page's browser tests: ``python _approval_host.py ROOT SESSION
CONTENT``. Its Write of ROOT/out.txt waits as a pending call (printed as
``{"pending": ID}``); once someone answers it (the page, or ``pegboard
approvals``), the host runs it and prints the result the model would get
(``{"is_error": ..., "text": ...}``)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from pegboard import Answer, Toolbox, hookimpl

WAIT_S = 120.0


class LaterHost:
    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer.later()


async def main(root: str, session_id: str, content: str) -> None:
    session = Toolbox.load(cwd=root, plugins=["fs"], host=LaterHost()).session("default", session_id=session_id)
    told = await session.call("Write", {"file_path": f"{root}/out.txt", "content": content}, call_id="w1")
    [waiting] = [c for c in session.pending.list() if c.call_id == "w1"]
    print(json.dumps({"pending": waiting.id, "told": told.text_content()}), flush=True)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        call = session.pending.get(waiting.id)
        if call is not None and call.status != "pending":
            result = await session.pending.resolve(waiting.id)
            print(json.dumps({"is_error": result.is_error, "text": result.text_content()}), flush=True)
            return
        await asyncio.sleep(0.1)
    print(json.dumps({"error": f"no answer within {WAIT_S:g} s"}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))

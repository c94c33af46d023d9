"""What ``pegboard serve --http`` tells the operator, on stderr.

``--log-format text`` (the default) keeps today's few lines for a person at
a terminal: where it serves, where the token is, warnings. ``--log-format
json`` writes one JSON object per line for a log collector: every request
(method, path, status, milliseconds, the client and how it signed in, the
replica), every refused sign-in and why (never the credential), every tool
call's outcome, every pending call waited on and how it ended, the
replicas' comings and goings. Each line has ``ts`` (seconds since the
epoch), ``level`` and ``event``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

__all__ = ["ServeLog"]

LEVELS = ("debug", "info", "warning", "error")


class ServeLog:
    def __init__(self, json_lines: bool = False, stream: TextIO | None = None, replica: str | None = None):
        self.json = json_lines
        self._stream = stream
        self.replica = replica

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr  # looked up at each line: serve moves sys.stderr's fd around

    def say(self, text: str, *, event: str = "notice", level: str = "info", **fields: Any) -> None:
        """A line for a person (text) that is also an event (JSON)."""
        if self.json:
            self.event(event, level=level, message=text, **fields)
        else:
            print(f"pegboard: {text}", file=self.stream, flush=True)

    def event(self, event: str, *, level: str = "info", **fields: Any) -> None:
        """A structured event: written in JSON mode; in text mode only warnings and errors, as a line."""
        if not self.json:
            if LEVELS.index(level) >= LEVELS.index("warning"):
                detail = fields.get("message") or " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
                print(f"pegboard: {event}: {detail}", file=self.stream, flush=True)
            return
        line: dict[str, Any] = {"ts": round(time.time(), 3), "level": level, "event": event}
        if self.replica is not None:
            line["replica"] = self.replica
        line.update((k, v) for k, v in fields.items() if v is not None)
        try:
            print(json.dumps(line, default=str, ensure_ascii=False), file=self.stream, flush=True)
        except (OSError, ValueError):
            pass  # a closed stderr must not take a request down

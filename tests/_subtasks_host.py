"""A test host with a model loop of its own, for the subtasks plugin.

``ScriptedHost`` implements ``pegboard_run_subagent``: each run is handed to
a script chosen by the first word of its prompt (``"write: ..."`` runs
``scripts["write"]``), an async function of the ``SubagentRun`` that makes
the calls a model would and returns the report. It records every run, and
every event and ask it hears.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pegboard import Answer, Decision, PermissionRequest, Session, Toolbox, hookimpl

Script = Callable[[Any], Awaitable[str]]

__all__ = ["ScriptedHost", "load", "project"]


class ScriptedHost:
    def __init__(self, scripts: dict[str, Script], *, asks: bool = False, answer: bool = True,
                 listens: bool = True):
        self.scripts = scripts
        self.runs: list[Any] = []
        self.events: list[tuple[str, str, dict[str, Any]]] = []
        self.asked: list[tuple[str, tuple[str, ...]]] = []
        self.answer = answer
        self.release = asyncio.Event()
        self.ask_blocks = False
        if not asks:
            self.pegboard_ask = None  # type: ignore[assignment]  # headless: nobody answers
        if not listens:
            self.pegboard_event = None  # type: ignore[assignment]

    @hookimpl
    async def pegboard_run_subagent(self, run: Any) -> str:
        self.runs.append(run)
        word = run.prompt.rsplit("\n\n", 1)[-1].split(":", 1)[0].strip()
        script = self.scripts.get(word)
        if script is None:
            return f"no script for {word!r}"
        return await script(run)

    @hookimpl
    def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
        self.events.append((session.id, kind, data))

    @hookimpl
    async def pegboard_ask(self, request: PermissionRequest, decision: Decision) -> Answer:
        self.asked.append((request.tool.name, request.session.chain))
        if self.ask_blocks:
            await self.release.wait()
        return Answer(allow=self.answer, message=None if self.answer else "no, thanks")


def project(tmp_path: Path, config: str = "", *, user: str = "") -> Path:
    """A project folder; ``config`` is its own .pegboard/config.toml (which,
    untrusted, may only narrow), ``user`` is appended to the user's config."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    if user:
        from pegboard.paths import config_dir

        path = config_dir() / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(user)
    if config:
        (root / ".pegboard").mkdir(exist_ok=True)
        (root / ".pegboard" / "config.toml").write_text(config, encoding="utf-8")
    return root


def load(root: Path, host: object | None = None, plugins: tuple[str, ...] = ("fs", "subtasks")) -> Toolbox:
    return Toolbox.load(cwd=root, host=host, plugins=list(plugins))

"""The hooks the subtasks plugin adds: one for hosts, one for plugins.

* ``pegboard_run_subagent(run)``: the host runs one sub-agent's model loop.
  pegboard is a tool layer; the loop that talks to a model is the host's.
* ``pegboard_agent_dirs()``: folders of agent definitions a plugin ships.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pegboard import hookspec

if TYPE_CHECKING:
    from ._run import SubagentRun


@hookspec(firstresult=True)
def pegboard_run_subagent(run: SubagentRun) -> str | Awaitable[str] | None:
    """Host: run one sub-agent to its final report, or return None to pass.

    ``run.session`` is the child's own session (its catalogue and call API,
    already narrowed); ``run.system_prompt``, ``run.prompt`` and
    ``run.model`` say what to ask; ``run.messages`` is the conversation so
    far, which the host extends and pegboard keeps; ``run.cancelled`` is set
    when the run is stopped. May be a coroutine. Without an implementation
    (or when every one returns None) the configured reference runner runs it.
    """


@hookspec
def pegboard_agent_dirs() -> Iterable[Path] | None:
    """Folders of agent definitions this plugin ships (``<name>.md`` files)."""

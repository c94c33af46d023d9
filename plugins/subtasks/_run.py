"""What a host is handed to run one sub-agent, and the conversation format.

The conversation (``SubagentRun.messages``) is a list of JSON objects that
pegboard keeps in the store between prompts. The reference runners write
this format, independent of any vendor's, so a follow-up can go to another
runner than the spawn did:

* ``{"role": "user", "content": "text"}``
* ``{"role": "assistant", "content": "text", "tool_calls": [{"id", "name", "input"}]}``
* ``{"role": "tool", "results": [{"id", "name", "result": <ToolResult as JSON>}]}``

A host with a loop of its own may keep its own format there instead: it
gets back exactly what it left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pegboard import ToolResult

if TYPE_CHECKING:
    from pegboard import PluginSession

__all__ = ["SubagentRun", "assistant_message", "last_text", "repair", "tool_message", "user_message"]


@dataclass
class SubagentRun:
    """One run of a sub-agent: its first prompt, or a follow-up."""

    session: PluginSession
    """The child's session: its catalogue (``session.catalogue()``) and calls
    (``session.call_batch``), narrowed to what the child may do."""
    agent_id: str
    agent_type: str
    description: str
    system_prompt: str
    prompt: str
    """This run's prompt (the task, or a follow-up message)."""
    model: str | None
    """The model hint (a name from the agent's definition or the caller, or None)."""
    max_turns: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The conversation so far; extend it, and pegboard keeps it."""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the run is stopped (TaskStop, the parent session closing)."""
    follow_up: bool = False
    turns: int = 0
    """Model turns taken in this run; a runner counts them."""
    exhausted: bool = False
    """Set by a runner that stopped at ``max_turns`` with work left: the report says so."""
    handback: str | None = None
    """The report the child handed in with SubagentHandback: it is the run's report, and the run ends."""
    handed_back: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the child called SubagentHandback: a host's loop may stop there (it is stopped anyway
    once the call's result is back), returning anything: ``handback`` is the report."""
    _saver: Callable[[SubagentRun], Awaitable[None]] | None = field(default=None, repr=False)

    @property
    def chain(self) -> tuple[str, ...]:
        """Who this is, from the top session down (``("main", "reviewer")``)."""
        return self.session.chain

    async def save(self) -> None:
        """Keep ``messages`` now (the runners do after every turn, so a crash
        loses at most the turn in flight); it is kept at the end anyway."""
        if self._saver is not None:
            await self._saver(self)


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant_message(text: str, tool_calls: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [{"id": c["id"], "name": c["name"], "input": c["input"]} for c in tool_calls]
    return message


def tool_message(results: Sequence[tuple[dict[str, Any], ToolResult]]) -> dict[str, Any]:
    return {"role": "tool", "results": [{"id": call["id"], "name": call["name"],
                                         "result": result.model_dump(mode="json")} for call, result in results]}


def result_of(entry: dict[str, Any]) -> ToolResult:
    return ToolResult.model_validate(entry["result"])


def repair(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A conversation that stopped between a model's tool calls and their
    results (a stopped run, a crash) gets an error result for each call left
    unanswered, so every API accepts it again."""
    stopped = ToolResult.error("Not run: the agent was stopped before this call.")
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        out.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        if index < len(messages) and messages[index].get("role") == "tool":
            following = messages[index]
            index += 1
            answered = {r.get("id") for r in following.get("results", ())}
            missing = [c for c in calls if c.get("id") not in answered]
            if missing:
                following = {**following, "results": [*following.get("results", ()),
                                                      *tool_message([(c, stopped) for c in missing])["results"]]}
            out.append(following)
        else:
            out.append(tool_message([(c, stopped) for c in calls]))
    return out


def last_text(messages: Sequence[dict[str, Any]]) -> str:
    """The text of the model's last reply that has any."""
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str) \
                and message["content"].strip():
            return str(message["content"])
    return ""

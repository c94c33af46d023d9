"""The session as plugins see it: what ``ctx.session``, ``request.session``,
``call.session`` and hooks' ``session`` argument offer.

A ``Protocol``, so that the contract (the tool, decision and hook types)
names no engine: the engine's ``Session`` is one (mypy checks it in
core/_engine/session.py), and a plugin that uses only these members works with any.
A host that made the session itself keeps the concrete ``pegboard.Session``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from .calls import PendingCall
    from .catalogue import Catalogue
    from .clients import Client
    from .decisions import Answer, CompiledRule, Decision, DecisionKind, Grant
    from .levels import Access
    from .policy import Policy
    from .tasks import BackgroundTasks
    from .tools import Tool, ToolResult

__all__ = ["PendingCalls", "PluginSession"]


class PendingCalls(Protocol):
    """A session's calls waiting for a person's answer (``session.pending``)."""

    def hold(self, tool: str, input: dict[str, Any], call_id: str, decision: Decision) -> PendingCall:
        """Keep a call for a person's answer (the model is told it waits); the host hears
        ``approval.pending``."""
        ...

    def list(self) -> list[PendingCall]:
        """This session's calls not run yet (answered or not), oldest first."""
        ...

    def get(self, pending_id: str) -> PendingCall | None:
        """The pending call ``pending_id`` of this session, or None."""
        ...

    async def resolve(self, pending_id: str, answer: Answer | None = None) -> ToolResult:
        """Answer a pending call (or take the answer given elsewhere) and settle it: approved, it
        runs now; denied, the result says so."""
        ...


class PluginSession(Protocol):
    """One agent conversation, as a plugin's tools and hooks see it.

    Read ``id``, ``root`` and ``working_dirs``; keep per-session state in
    ``plugin_state`` (a handler's ``ctx.state``); tell the host things with
    ``emit``; run other tools through ``call`` (the whole pipeline,
    permissions included); make a sub-agent's session with ``child``.
    """

    @property
    def id(self) -> str:
        """The session's id: the one the host gave (a durable session), else a made-up one."""
        ...

    @property
    def root(self) -> Path:
        """The project root (resolved)."""
        ...

    @property
    def working_dirs(self) -> tuple[Path, ...]:
        """The folders the session may work in (resolved; the root first)."""
        ...

    @property
    def policy(self) -> Policy:
        """The permission mode or level in force."""
        ...

    @property
    def mode(self) -> str:
        """The name of the mode or level in force (``"default"``, ``"acceptEdits"``, ``"read"``...)."""
        ...

    @property
    def parent(self) -> PluginSession | None:
        """The session this one was made from (``child``); None for a top session."""
        ...

    @property
    def client(self) -> Client | None:
        """Who the session's calls are made for, when the host serves several (its ``id``, how it
        signed in, the level its credential allows); None: the host's own."""
        ...

    @property
    def chain(self) -> tuple[str, ...]:
        """Labels from the top session down to this one (the top one is ``"main"`` unless labelled)."""
        ...

    @property
    def durable(self) -> bool:
        """The session keeps a record in the store (made with an id), so it can be resumed."""
        ...

    @property
    def closed(self) -> bool:
        """True once the session was closed (``aclose``)."""
        ...

    @property
    def can_ask(self) -> bool | None:
        """False when a question to the person reaches nobody in this session; None: not known."""
        ...

    output_schema: dict[str, Any] | None
    """The JSON Schema of the answer the host wants from the model, or None (the subtasks
    plugin gives a child the schema its caller asked for)."""

    structured_output: Any
    """The model's answer, validated against ``output_schema``, once given (None until then)."""

    @property
    def scratchpad(self) -> MutableMapping[str, str]:
        """The session's scratchpad: outputs saved by name (the ``scratchpad`` argument), which
        ScratchpadRead reads back; a plugin may keep an entry there for the model to read."""
        ...

    @property
    def data_dir(self) -> Path:
        """A private folder for this session's files, created on first use."""
        ...

    @property
    def person_lock(self) -> asyncio.Lock:
        """Held while the person is being asked something for this session (shared by its children)."""
        ...

    @property
    def tasks(self) -> BackgroundTasks:
        """The session's background tasks: ``start``, ``list``, ``get``, ``wait``, ``stop``."""
        ...

    @property
    def pending(self) -> PendingCalls:
        """The session's calls waiting for a person's answer."""
        ...

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """Plugin ``plugin``'s own dict in this session (``ctx.state`` for a handler)."""
        ...

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Tell the host something (``pegboard_event``); a failing host hook is reported, never raised."""
        ...

    def note_once(self, key: str) -> bool:
        """True the first time ``key`` is seen in this session."""
        ...

    def set_mode(self, name: str) -> None:
        """Switch the session's mode or level; the operator's ceilings still hold."""
        ...

    async def elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Put a form to the person through the host (declined when nobody can be asked)."""
        ...

    def rule_for(self, behavior: DecisionKind, tool: str, input: Mapping[str, Any]) -> CompiledRule | None:
        """The first ``behavior`` rule that would decide a call of ``tool`` with ``input`` here."""
        ...

    def rules_for(self, behavior: DecisionKind, tool: str) -> tuple[CompiledRule, ...]:
        """Every ``behavior`` rule written for ``tool`` by name (config layers, then this session's grants):
        the same tuple while they are unchanged."""
        ...

    def is_protected(self, path: str, *, git_dirs: bool = True, absent: int = 0) -> bool:
        """Whether the resolved ``path`` is protected (``[permissions] protected_paths``, pegboard's own
        config, a git directory)."""
        ...

    def protected_patterns(self) -> tuple[str, ...]:
        """The ``[permissions] protected_paths`` patterns in force, in gitignore order."""
        ...

    def inside_working_dirs(self, path: str) -> bool:
        """Whether the resolved ``path`` is one of this session's working directories or lies within one."""
        ...

    def originals(self, path: str) -> tuple[str, ...]:
        """The paths the resolved ``path`` copies (a worktree's file in its repository), nearest first."""
        ...

    def copies_of(self, path: str) -> tuple[str, ...]:
        """Where the resolved ``path`` appears in this session's copies of folders."""
        ...

    def grant(self, rule_text: str, behavior: str = "allow", *, source: str = "session grant") -> Grant:
        """Add a rule for this session only, through the owning plugin's grammar."""
        ...

    def child(self, *, mode: str | None = None, hide: Iterable[str] = (), only: Iterable[str] | None = None,
              working_dirs: Sequence[str | os.PathLike[str]] | None = None, label: str | None = None,
              session_id: str | None = None,
              copies: Mapping[Any, str | os.PathLike[str]] | None = None,
              access: Mapping[str, Access] | None = None) -> PluginSession:
        """A session for a sub-agent of this one, never wider than it (see ``Session.child``)."""
        ...

    def access_to(self, tool: Tool) -> Access:
        """What this session may do with ``tool``: ``"full"`` for a top session; for a sub-agent's,
        what its maker granted within the tool's ``subagents`` (``ctx.access``, ``request.access``)."""
        ...

    def delete_child(self, session_id: str) -> bool:
        """Delete a durable session made from this one, and what plugins keep for it."""
        ...

    def offered(self) -> list[Tool]:
        """The tools this session offers now, in catalogue order."""
        ...

    def catalogue(self) -> Catalogue:
        """The tools this session offers the model now, in each model API's format."""
        ...

    async def call(self, name: str, arguments: Any = None, *, call_id: str | None = None,
                   approval: Answer | None = None) -> ToolResult:
        """Run one tool call through the whole pipeline; a tool's failure is an error result."""
        ...

    async def call_batch(self, calls: Iterable[tuple[str, Any] | tuple[str, Any, str]]) -> list[ToolResult]:
        """The calls of one model reply: read-only ones side by side, the rest alone and in order."""
        ...

    async def aclose(self) -> None:
        """Stop the session's tasks and call ``pegboard_session_closed``."""
        ...

"""What a session holds: its folders, mode, grants, notes, plugin state and
locks, and the answers made from them alone (is a path protected or inside
the working directories, the ask chain, the host's events).

``SessionState`` is the part of a session that the pipeline, the permission
engine and the values plugins are handed (``ToolContext``,
``PermissionRequest``) consult, and it calls none of them. Where an answer
needs the toolbox (is a tool offered now, what may a sub-agent do with it)
it asks the toolbox, which reads the state's attributes and never calls
back. ``Session`` (core/_engine/session.py) adds what drives the engine: calls,
decisions, the catalogue, grants, children. So a call goes one way through
the core's modules (tests/core/engine/test_core_call_paths.py).
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.errors import report_failure as _report
from .._loading.config import data_dir
from .._util.folders import private_dir

if TYPE_CHECKING:
    import asyncio

    from .._api.clients import Client
    from .._api.decisions import CompiledRule, Rule
    from .._api.levels import Access
    from .._api.policy import Policy
    from .permissions.protected import Prefixes
    from .streams import CallStream
    from .._api.tools import Tool
    from .toolbox import Toolbox

__all__ = ["SessionState"]


class SessionState:
    """Working directories, mode, loaded deferred tools, notes given, grants,
    the scratchpad and per-plugin state of one session.

    Two sessions never share any of these.
    """

    def __init__(self, toolbox: Toolbox, policy: Policy, session_id: str | None = None, *,
                 working_dirs: tuple[Path, ...] | None = None):
        self.toolbox = toolbox
        """The toolbox the session was made from. For hosts: a plugin gets what it needs
        through hooks and contexts, not through it."""
        self.id = session_id or uuid.uuid4().hex[:12]
        """The session's id: the one the host gave (a durable session), else a made-up one."""
        self.policy = policy
        """The permission mode or level in force (``set_mode`` changes it)."""
        self.working_dirs: tuple[Path, ...] = working_dirs or toolbox.settings.working_dirs()
        """The folders the session may work in (resolved; the root first)."""
        self.root: Path = self.working_dirs[0]
        """The project root (resolved)."""
        self.loaded: set[str] = set()
        """The deferred tools ToolSearch has loaded into this session's catalogue."""
        self.scratchpad: dict[str, str] = {}
        """The session's scratchpad: saved outputs by name (the ``scratchpad`` argument)."""
        self._protection = toolbox.permissions.protection
        self._prefixes: tuple[tuple[Path, ...] | None, Prefixes] = (None, ((), ()))
        self._notes: set[str] = set()
        self._plugin_state: dict[str, dict[str, Any]] = {}
        self._grants: dict[str, dict[str, list[CompiledRule]]] = {"allow": {}, "ask": {}, "deny": {}}
        self._data_dir: Path | None = None
        self._call_ids = itertools.count(1)
        self._ask_lock: asyncio.Lock | None = None
        self._person_lock: asyncio.Lock | None = None
        self.closed = False
        """True once ``aclose`` (or ``close``) ran: its tasks stopped, ``pegboard_session_closed`` called."""
        # Durable sessions (made with an id) keep a record in the store.
        self.durable = False
        """The session keeps a record in the store (made with an id), so it can be resumed."""
        self.resumed = False
        """A durable session found in the store and carried on, not new."""
        self.parent_id: str | None = None
        """The id of the session this one was made from (``child``), for the store and the audit."""
        # A child session (``child``): where it came from, how asks name it,
        # and the tools it is not offered (names, groups, or only some).
        self.parent: SessionState | None = None
        """The session this one was made from (``child``); None for a top session."""
        self._copies: tuple[tuple[str, str], ...] = ()
        self.label: str | None = None
        """A child's name in asks and in ``chain`` (the sub-agent's type, say)."""
        self.hidden_tools: frozenset[str] = frozenset()
        """Tools, groups or rule names a child session is not offered."""
        self.only_tools: frozenset[str] | None = None
        """When set, the only tools a child session is offered."""
        self.granted_access: Mapping[str, Access] = {}
        """What a child session's maker granted it of tools that sub-agents get only when given
        (``child(access=...)``), by tool name; ``access_to`` says what it holds."""
        self.output_schema: dict[str, Any] | None = None
        """The JSON Schema of the answer the host wants from the model (``Toolbox.session(output_schema=...)``),
        or None; a plugin offers a tool to hand it in (structured_output's StructuredOutput)."""
        self.can_ask: bool | None = None
        """False when the host knows that a tool's question to the person (``elicit``, or a plugin's
        own hook) reaches nobody in this session (``pegboard serve`` for an MCP client that cannot
        take a form mid-call): tools that only ask are then not offered. None: not known."""
        self.client: Client | None = None
        """Who the session's calls are made for, when the host serves several
        (``Toolbox.session(client=...)``); a child session has its parent's. None: the host's own."""
        self.requester: str | None = None
        """Who the session's calls are made for, kept with its pending calls: the client's id when
        the session has one (a host serving several clients may name them so without a ``Client``);
        None: the session it was made from says, else the local user."""
        self.structured_output: Any = None
        """The model's answer, validated against ``output_schema``, once given (None until then)."""
        # The toolbox's answers for this session, kept here because they last as long as it:
        # whether a tool is narrowed away (by tool and the two sets), and the tools found
        # offered by name with the policy they were found under (Toolbox.offered_tool).
        self._hides: dict[tuple[str, str, frozenset[str], frozenset[str] | None], bool] = {}
        self._offered: dict[str, tuple[Tool, Policy]] = {}
        self._streams: dict[str, CallStream] = {}  # by call id and by followed task id (Session.stream)

    # --- state -------------------------------------------------------------

    @property
    def mode(self) -> str:
        """The name of the mode or level in force (``"default"``, ``"acceptEdits"``, ``"read"``...)."""
        return self.policy.name

    @property
    def project_trusted(self) -> bool:
        """Whether the project root is trusted (see ``PluginContext.project_trusted``)."""
        return self.toolbox.settings.trusted

    @property
    def ask_lock(self) -> asyncio.Lock:
        """Held while a call of this session is being decided by a person."""
        if self._ask_lock is None:
            import asyncio  # here, not at the top: start-up never needs it

            self._ask_lock = asyncio.Lock()
        return self._ask_lock

    @property
    def person_lock(self) -> asyncio.Lock:
        """Held while the person is being asked something for this session.
        A child session shares its parent's, so the person sees one question
        at a time from the whole family, while the sessions' other calls go
        on (a parent is not held up by a child waiting for an answer)."""
        if self.parent is not None:
            return self.parent.person_lock
        if self._person_lock is None:
            import asyncio

            self._person_lock = asyncio.Lock()
        return self._person_lock

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """Plugin ``plugin``'s own dict in this session (``ctx.state`` for a handler), never
        shared with another session."""
        found = self._plugin_state.get(plugin)
        return found if found is not None else self._plugin_state.setdefault(plugin, {})

    def note_once(self, key: str) -> bool:
        """True the first time ``key`` is seen in this session (for notes the
        model should get once, not on every call)."""
        if key in self._notes:
            return False
        self._notes.add(key)
        return True

    def notify_once(self, key: str, text: str) -> bool:
        """Tell the host a one-time note (event ``note``), the first time
        ``key`` is seen in this session; True when it was sent."""
        if not self.note_once(key):
            return False
        self.emit("note", {"key": key, "text": text})
        return True

    def add_working_dir(self, path: str | os.PathLike[str]) -> Path:
        """Add a working directory for this session only (other sessions of
        the same toolbox keep theirs)."""
        real = (self.root / Path(path)).resolve()
        if not real.is_dir():
            raise ValueError(f"{real} is not a directory")
        if real not in self.working_dirs:
            self.working_dirs = (*self.working_dirs, real)
        return real

    @property
    def data_path(self) -> Path:
        """Where this session's private files live, without creating it."""

        return data_dir() / "sessions" / self.id

    @property
    def data_dir(self) -> Path:
        """A private directory for this session's files (spilled output, logs), created on first use."""
        if self._data_dir is None:
            path = private_dir(self.data_path)  # the data dir and sessions/ 0700 too, not only the leaf
            self._data_dir = path
        return self._data_dir

    def emit(self, kind: str, data: dict[str, Any]) -> None:
        """Tell the host something (``pegboard_event``); a failing host hook
        is reported on stderr, never raised into the tool."""
        if self._streams:  # a call of this session is being streamed (Session.stream)
            stream = self._streams.get(str(data.get("call_id"))) or (
                self._streams.get(str(data.get("id"))) if kind == "background.done" else None)
            if stream is not None:
                stream.deliver(kind, data)
        for outcome in self.toolbox.hooks.each("pegboard_event", session=self, kind=kind, data=data):
            if outcome.error is not None:  # the host's bug must not break a tool
                _report(f"pegboard_event of plugin {outcome.plugin!r}", outcome.error)

    def next_call_id(self) -> str:
        """A call id unique in this session ("c1", "c2", ...) for calls the
        caller gave none; a counter, because uuid4 costs more than a call's
        whole permission decision."""
        return f"c{next(self._call_ids)}"

    # --- tools offered -----------------------------------------------------

    def _offered_tool(self, name: str) -> Tool | None:
        """Tool ``name`` if this session is offered it now, else None: the
        toolbox's answer (``Toolbox.offered_tool``), kept per name while the
        tool and the policy stay the same objects (whether the policy offers
        a tool depends only on those; it was a tenth of a small call's
        pipeline). Whether this session hides the tool is asked each time."""
        found = self._offered.get(name)
        if found is not None and found[1] is self.policy and self.toolbox.tools.get(name) is found[0]:
            return None if self.hides(found[0]) else found[0]
        return self.toolbox.offered_tool(name, self)  # type: ignore[arg-type]  # every SessionState is a Session

    def hides(self, tool: Tool) -> bool:
        """Whether this session is not offered ``tool`` whatever its policy
        says: a child session's narrowing, or the tool's own ``offered_when``
        (``Toolbox.hides``, asked only when either may apply)."""
        if tool.offered_when is None and self.parent is None and not self.hidden_tools \
                and self.only_tools is None:
            return False
        return self.toolbox.hides(self, tool)  # type: ignore[arg-type]  # every SessionState is a Session

    def access_to(self, tool: Tool) -> Access:
        """What this session may do with ``tool``: ``"full"`` for a top
        session; for a child, its maker's grant (``child(access=...)``; without
        one, ``"none"`` for a tool sub-agents get only when given, else what
        the parent holds), never more than the tool's ``subagents`` allows
        nor than the parent holds. ``"read"`` is only what the tool counts as
        reading: the tool enforces it (``request.access``, ``ctx.access``)."""
        if self.parent is None:
            return "full"
        return self.toolbox.access_to(self, tool)  # type: ignore[arg-type]  # every SessionState is a Session

    # --- grants ------------------------------------------------------------

    def _add_rule(self, compiled: CompiledRule) -> None:
        """Apply a compiled rule to this session's calls (a grant, a client's rule)."""
        self._grants[compiled.rule.behavior].setdefault(compiled.rule.tool, []).append(compiled)

    def _revoke(self, compiled: CompiledRule) -> None:
        rules = self._grants[compiled.rule.behavior].get(compiled.rule.tool, [])
        if compiled in rules:
            rules.remove(compiled)

    def has_grants(self) -> bool:
        """Whether this session or a parent holds a grant of any behavior
        (or held one: a revoked grant may leave its tool's empty list)."""
        grants = self._grants
        if grants["allow"] or grants["ask"] or grants["deny"]:
            return True
        return self.parent is not None and self.parent.has_grants()

    def grant_index(self, behavior: str) -> dict[str, list[CompiledRule]]:
        """This session's ``behavior`` grants by tool name, a parent's deny and ask grants included."""
        own = self._grants[behavior]
        if self.parent is None or behavior == "allow":
            return own
        # A parent's deny and ask grants hold for its children whenever they
        # were made; its allow grants were copied when the child was made.
        inherited = self.parent.grant_index(behavior)
        if not inherited:
            return own
        merged = {tool: list(rules) for tool, rules in inherited.items()}
        for tool, rules in own.items():
            merged.setdefault(tool, []).extend(rules)
        return merged

    def grants(self) -> list[Rule]:
        """The rules granted in this session (``grant``, "always allow" for the session)."""
        return [c.rule for rules in self._grants.values() for cs in rules.values() for c in cs]

    # --- paths -------------------------------------------------------------

    def is_protected(self, path: str, *, git_dirs: bool = True, absent: int = 0) -> bool:
        """Whether the resolved ``path`` is protected (``[permissions] protected_paths``, pegboard's own config,
        and with ``git_dirs`` a git directory under any name or a path in one: a bare mirror, a
        ``--separate-git-dir``). A plugin that walks folders itself may pass ``git_dirs=False`` and look
        for git directories with ``pegboard.paths.looks_like_git_dir`` as it lists them (one look
        per folder rather than one per entry and folder above it). ``absent``: how many of ``path``'s
        last names the caller has just found missing (``PermissionRequest.path_vote`` knows from
        resolving): no git directory is looked for in folders that are not there."""
        kept = self._prefixes  # (_dir_prefixes' common case, without its call: every write's vote asks)
        prefixes = kept[1] if kept[0] is self.working_dirs else self._dir_prefixes()
        return self._protection.is_protected(path if type(path) is str else str(path), prefixes, git_dirs, absent)

    def protected_patterns(self) -> tuple[str, ...]:
        """The ``[permissions] protected_paths`` patterns in force (the
        defaults, then every layer's; gitignore order, ``!`` unprotects), for
        a plugin that must find protected paths before anything names one,
        as the shell's sandbox does."""
        return self._protection.patterns

    def inside_working_dirs(self, path: str) -> bool:
        """Whether the resolved ``path`` is one of this session's working directories or lies within one."""
        kept = self._prefixes  # (_dir_prefixes' common case, without its call: every path's vote asks)
        inside = kept[1][0] if kept[0] is self.working_dirs else self._dir_prefixes()[0]
        return (path + "/").startswith(inside)

    def _dir_prefixes(self) -> Prefixes:
        """The working directories, and the folders protected patterns are
        relative to (those, the home folder, "/"), as prefixes ending in "/":
        string checks, for every path's vote. Kept until ``working_dirs``
        is another tuple."""
        kept = self._prefixes
        if kept[0] is not self.working_dirs:
            inside = tuple(dict.fromkeys(str(p).rstrip("/") + "/" for p in self.working_dirs))
            bases = tuple(dict.fromkeys((*inside, self._protection.home, "/")))
            kept = self._prefixes = (self.working_dirs, (inside, bases))
        return kept[1]

    def originals(self, path: str) -> tuple[str, ...]:
        """The paths ``path`` (resolved) copies, nearest first (see ``child``'s
        ``copies``): the same file in the repository a worktree was made
        from, and in the one that was made from, and so on. Empty for a
        session with no copies: what rule matchers check besides ``path``
        for deny and ask rules (never for allow rules: a copy widens nothing)."""
        if not self._copies:
            return ()
        out: list[str] = []
        current = path
        for _ in range(len(self._copies)):
            for copy, original in self._copies:
                if current == copy or current.startswith(copy.rstrip("/") + "/"):
                    current = original + current[len(copy):]
                    out.append(current)
                    break
            else:
                break
        return tuple(out)

    def copies_of(self, path: str) -> tuple[str, ...]:
        """The inverse of ``originals``: where ``path`` (resolved) appears in
        this session's copies of folders (a worktree's same file), for a
        sandbox that must hide or keep read-only what a deny rule names."""
        out: list[str] = []
        todo = [path]
        while todo and len(out) < 64:
            current = todo.pop()
            for copy, original in self._copies:
                if current == copy or current.startswith(copy.rstrip("/") + "/"):
                    continue  # already in the copy (a worktree lies inside its repository)
                if current == original or current.startswith(original.rstrip("/") + "/"):
                    found = copy + current[len(original):]
                    if found not in out and found != current:
                        out.append(found)
                        todo.append(found)
        return tuple(out)

    @property
    def chain(self) -> tuple[str, ...]:
        """Labels from the top session down to this one (the top one is
        ``"main"`` unless labelled): who is asking, for a host's prompt."""
        labels: list[str] = []
        session: SessionState | None = self
        while session is not None:
            labels.append(session.label or ("main" if session.parent is None else session.id))
            session = session.parent
        return tuple(reversed(labels))

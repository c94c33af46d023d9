"""A session: what lasts across the calls of one agent conversation."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._decisions import Answer, Decision, Rule
from ._levels import ACCESSES, Access, narrowest_access
from ._plugins import report_failure as _report
from ._policy import Policy, clamp_policy
from ._records import record
from ._tools import CORE_PLUGIN, Tool, ToolResult

if TYPE_CHECKING:
    import asyncio

    from ._clients import Client
    from ._catalogue import Catalogue
    from ._decisions import CompiledRule, DecisionKind
    from ._pending import PendingCalls
    from ._streams import CallStream
    from ._sync import SyncSession
    from ._tasks import BackgroundTasks
    from ._toolbox import Toolbox

__all__ = ["Grant", "Session"]

@record()
class Grant:
    """A rule granted for this session; ``revoke()`` ends it."""

    session: Session
    """The session the rule was granted in."""
    compiled: CompiledRule
    """The rule in force."""

    def __init__(self, session: Session, compiled: CompiledRule) -> None:
        self.session = session
        self.compiled = compiled

    def revoke(self) -> None:
        """End the grant: later calls of the session are decided without it."""
        self.session._revoke(self.compiled)


class Session:
    """Working directories, mode, loaded deferred tools, notes given,
    background tasks, the scratchpad and per-plugin state.

    Two sessions never share any of these.
    """

    def __init__(self, toolbox: Toolbox, policy: Policy, session_id: str | None = None):
        self.toolbox = toolbox
        """The toolbox the session was made from. For hosts: a plugin gets what it needs
        through hooks and contexts, not through it."""
        self.id = session_id or uuid.uuid4().hex[:12]
        """The session's id: the one the host gave (a durable session), else a made-up one."""
        self.policy = policy
        """The permission mode or level in force (``set_mode`` changes it)."""
        self.root: Path = toolbox.settings.root
        """The project root (resolved)."""
        self.working_dirs: tuple[Path, ...] = toolbox.settings.working_dirs()
        """The folders the session may work in (resolved; the root first)."""
        self.loaded: set[str] = set()
        """The deferred tools ToolSearch has loaded into this session's catalogue."""
        self.scratchpad: dict[str, str] = {}
        """The session's scratchpad: saved outputs by name (the ``scratchpad`` argument)."""
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
        self.parent: Session | None = None
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

    def set_mode(self, name: str) -> None:
        """Switch the session's mode or level; the operator's ceilings still hold, and the host
        hears ``mode.changed`` (``mode``, ``previous``) and ``catalogue.changed`` when the mode
        changes (a plugin may call it: the plan_mode plugin's EnterPlanMode does)."""
        # Through the engine: disable_bypass_permissions and the system
        # policy's ceiling hold for a mode switched mid-session too.
        before = self.policy
        self.policy = self.toolbox.permissions.session_policy(name, self.client)
        if self.policy != before:
            self.emit("mode.changed", {"mode": self.policy.name, "previous": before.name})
            self.emit("catalogue.changed", {"reason": "mode", "mode": self.policy.name})

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

    async def elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any]:
        """Put a form to the person through the host's ``pegboard_elicit``
        (declined when there is no host, or the host fails); an accepted
        answer has the schema's defaults filled in for fields left out."""
        hooks = self.toolbox.hooks
        if not hooks.implemented("pegboard_elicit"):
            return {"action": "decline"}
        async with self.ask_lock:
            try:
                answer = await hooks.afirst("pegboard_elicit", session=self, source=source, message=message,
                                            schema=schema)
            except Exception as exc:  # the host's bug declines the form, never breaks the tool
                _report("pegboard_elicit", exc)
                return {"action": "decline"}
        if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
            return {"action": "decline"}
        if answer["action"] != "accept":
            return {"action": answer["action"]}
        content = dict(answer.get("content") or {})
        for name, field_schema in (schema.get("properties") or {}).items():
            if name not in content and isinstance(field_schema, dict) and "default" in field_schema:
                content[name] = field_schema["default"]
        return {"action": "accept", "content": content}

    def plugin_state(self, plugin: str) -> dict[str, Any]:
        """Plugin ``plugin``'s own dict in this session (``ctx.state`` for a handler), never
        shared with another session."""
        return self._plugin_state.setdefault(plugin, {})

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
        from ._config import data_dir

        return data_dir() / "sessions" / self.id

    @property
    def data_dir(self) -> Path:
        """A private directory for this session's files (spilled output, logs), created on first use."""
        if self._data_dir is None:
            from ._dirs import private_dir

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

    def file_read(self, path: str | os.PathLike[str], source: str) -> None:
        """Deprecated: call the fs plugin's hook, ``context.notify("pegboard_file_read",
        session=..., path=..., source=...)``, from a plugin that showed a file."""
        import warnings

        warnings.warn("Session.file_read is deprecated and will be removed in the next release; call "
                      'PluginContext.notify("pegboard_file_read", session=session, path=path, source=source)',
                      DeprecationWarning, stacklevel=2)
        for outcome in self.toolbox.hooks.each("pegboard_file_read", session=self, path=Path(path),
                                               source=source, own_context=self.toolbox.context_for):
            if outcome.error is not None:  # the tool that showed the file has done its work
                _report(f"pegboard_file_read of plugin {outcome.plugin!r}", outcome.error)

    # --- grants ------------------------------------------------------------

    def grant(self, rule_text: str, behavior: str = "allow", *, source: str = "session grant") -> Grant:
        """Add a rule for this session only, through the plugin's grammar."""
        rule = Rule.parse(rule_text, behavior, source, self.root)  # type: ignore[arg-type]
        if rule.specifier is not None and self.toolbox.owner_of(rule.tool) is None:
            # The core would keep it as an inactive rule: a grant must not
            # wait for a tool that may come later under someone else's grammar.
            raise ValueError(f"no loaded plugin provides {rule.tool}")
        compiled = self.toolbox.permissions.compile(rule)
        if compiled is None:
            # Granting the whole tool in place of a specifier nobody can read
            # would be wider than what was asked for.
            raise ValueError(f"{rule.text}: no loaded plugin understands specifiers for {rule.tool}")
        self._add_rule(compiled)
        return Grant(self, compiled)

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

    # --- what decisions consult --------------------------------------------

    def rule_for(self, behavior: DecisionKind, tool: str, input: Mapping[str, Any]) -> CompiledRule | None:
        """The first ``behavior`` rule that would decide a call of ``tool``
        with ``input`` here: config layers and this session's grants, rules
        for the tool's group and for names it declares included."""
        return self.toolbox.permissions.rule_for(behavior, tool, input, self)

    def rules_for(self, behavior: DecisionKind, tool: str) -> tuple[CompiledRule, ...]:
        """Every ``behavior`` rule written for ``tool`` by name (config layers, then this session's grants):
        the same tuple while they are unchanged (see ``PermissionRequest.rules_for``)."""
        return self.toolbox.permissions.rules_for(behavior, tool, self)

    def is_protected(self, path: str, *, git_dirs: bool = True, absent: int = 0) -> bool:
        """Whether the resolved ``path`` is protected (``[permissions] protected_paths``, pegboard's own config,
        and with ``git_dirs`` a git directory under any name or a path in one: a bare mirror, a
        ``--separate-git-dir``). A plugin that walks folders itself may pass ``git_dirs=False`` and look
        for git directories with ``pegboard.paths.looks_like_git_dir`` as it lists them (one look
        per folder rather than one per entry and folder above it). ``absent``: how many of ``path``'s
        last names the caller has just found missing (``PermissionRequest.path_vote`` knows from
        resolving): no git directory is looked for in folders that are not there."""
        return self.toolbox.permissions.is_protected(path, self, git_dirs=git_dirs, absent=absent)

    def protected_patterns(self) -> tuple[str, ...]:
        """The ``[permissions] protected_paths`` patterns in force (the
        defaults, then every layer's; gitignore order, ``!`` unprotects), for
        a plugin that must find protected paths before anything names one,
        as the shell's sandbox does."""
        return tuple(self.toolbox.permissions.protected_patterns)

    def inside_working_dirs(self, path: str) -> bool:
        """Whether the resolved ``path`` is one of this session's working directories or lies within one."""
        return self.toolbox.permissions.inside(path, self)

    def grants(self) -> list[Rule]:
        """The rules granted in this session (``grant``, "always allow" for the session)."""
        return [c.rule for rules in self._grants.values() for cs in rules.values() for c in cs]

    # --- child sessions ----------------------------------------------------

    def child(self, *, mode: str | None = None, hide: Iterable[str] = (), only: Iterable[str] | None = None,
              working_dirs: Sequence[str | os.PathLike[str]] | None = None, label: str | None = None,
              session_id: str | None = None,
              copies: Mapping[Any, str | os.PathLike[str]] | None = None,
              access: Mapping[str, Access] | None = None) -> Session:
        """A session for a sub-agent of this one, never wider than it.

        ``mode``: a mode or level name, clamped to this session's
        (``clamp_policy``); None keeps this session's policy. ``hide``: tool
        names not offered to the child; a name hides what a deny rule of
        that name would cover (a group's name every tool of the group, as ``mcp__server``, a
        tool declaring it in ``rule_names``) and the tools that go with it
        (``metadata["requires"]``). ``only``: offer only these names (the
        core's own tools stay). Both add to what this session already
        hides. Tools registered with ``subagents=False`` are never offered
        to a child; those registered with an access (``subagents="read"``)
        only when ``access`` grants it, by tool name (``{"memory": "read"}``),
        and never more than the tool allows nor than this session holds
        (``access_to``); ``ValueError`` for a tool that takes no grant.
        ``working_dirs``: each must lie within one of this
        session's (``ValueError`` otherwise); the first is the child's root.
        The child starts with this session's allow grants; this session's
        deny and ask grants keep applying to it, also those made later. It
        shares this session's ``person_lock``. ``label`` names it in ``chain``.
        ``session_id`` names the child; when this session is durable, the
        child is too, recorded in the store with this session as its parent.
        ``copies``: folders of the child's that copy folders of this
        session's (a git worktree of the repository: ``{worktree: repo}``);
        deny and ask rules written for a path in the original apply to the
        same path in the copy too (``originals``), so a rule anchored at the
        project root still holds in the worktree. Inherited down the chain.
        """
        from ._paths import is_within

        granted = self._granted(access or {})
        child = Session(self.toolbox, clamp_policy(mode, self.policy.name) if mode else self.policy, session_id)
        if session_id is not None and self.durable:
            self.toolbox.make_durable(child, session_id, self.id)
        child.parent, child.parent_id = self, self.id
        child.client = self.client
        child.label = label
        child.granted_access = granted
        child.hidden_tools = self.hidden_tools | frozenset(hide)
        if only is not None:
            wanted = frozenset(only)
            child.only_tools = wanted if self.only_tools is None else self.only_tools & wanted
        else:
            child.only_tools = self.only_tools
        if working_dirs is not None:
            dirs = tuple(dict.fromkeys(Path(os.path.realpath(self.root / Path(d))) for d in working_dirs))
            for d in dirs:
                if not d.is_dir():
                    raise ValueError(f"{d} is not a directory")
                if not any(is_within(d, Path(os.path.realpath(mine))) for mine in self.working_dirs):
                    raise ValueError(f"{d} is not within this session's working directories")
            if not dirs:
                raise ValueError("working_dirs: give at least one directory")
            child.root, child.working_dirs = dirs[0], dirs
        else:
            child.root, child.working_dirs = self.root, self.working_dirs
        child._grants["allow"] = {tool: list(rules) for tool, rules in self._grants["allow"].items()}
        mapped = dict(self._copies)
        for copy, original in (copies or {}).items():
            mapped[os.path.realpath(self.root / Path(copy))] = os.path.realpath(self.root / Path(original))
        # Longest copy first: a worktree made inside another worktree maps to it, then on.
        child._copies = tuple(sorted(mapped.items(), key=lambda kv: -len(kv[0])))
        return child

    def _granted(self, access: Mapping[str, Access]) -> dict[str, Access]:
        """``child``'s ``access``, checked: each a tool that takes a grant, at a known access."""
        out: dict[str, Access] = {}
        for name, level in access.items():
            if level not in ACCESSES:
                raise ValueError(f"access to {name!r}: {level!r} is not one of {', '.join(ACCESSES)}")
            tool = self.toolbox.tools.get(name)
            if tool is not None and isinstance(tool.subagents, bool):
                raise ValueError(f"{name} takes no access grant: a sub-agent gets it "
                                 f"{'as its policy offers it' if tool.subagents else 'never'}; "
                                 "hide it to take it away")
            out[name] = level  # (a tool not loaded here is not offered anyway)
        return out

    def access_to(self, tool: Tool) -> Access:
        """What this session may do with ``tool``: ``"full"`` for a top
        session; for a child, its maker's grant (``child(access=...)``; without
        one, ``"none"`` for a tool sub-agents get only when given, else what
        the parent holds), never more than the tool's ``subagents`` allows
        nor than the parent holds. ``"read"`` is only what the tool counts as
        reading: the tool enforces it (``request.access``, ``ctx.access``)."""
        parent = self.parent
        if parent is None:
            return "full"
        ceiling = tool.subagents
        if ceiling is False:
            return "none"
        if ceiling is True:
            return parent.access_to(tool)
        return narrowest_access(self.granted_access.get(tool.name, "none"), ceiling, parent.access_to(tool))

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

    def delete_child(self, session_id: str) -> bool:
        """Delete a durable session made from this one (``child(session_id=...)``),
        the sessions made from it, and what plugins keep for them. False when
        the store records no such child of this session (another session's
        children are never touched)."""
        from ._sessions import SessionRecords

        records = SessionRecords(self.toolbox)
        if records.parent_of(session_id) != self.id:
            return False
        deleted, problems = records.delete([session_id])
        for problem in problems:
            _report(f"deleting session {session_id}", RuntimeError(problem))
        return session_id in deleted

    @property
    def chain(self) -> tuple[str, ...]:
        """Labels from the top session down to this one (the top one is
        ``"main"`` unless labelled): who is asking, for a host's prompt."""
        labels: list[str] = []
        session: Session | None = self
        while session is not None:
            labels.append(session.label or ("main" if session.parent is None else session.id))
            session = session.parent
        return tuple(reversed(labels))

    def hides(self, tool: Tool) -> bool:
        """Whether this session is not offered ``tool`` whatever its policy
        says (a child session's narrowing, or the tool's own ``offered_when``)."""
        if tool.offered_when is not None and not self._offers_now(tool):
            return True
        if self.parent is None and not self.hidden_tools and self.only_tools is None:
            return False
        # Asked twice per call (the catalogue lookup, the decision); the
        # answer depends only on the tool and on these two sets.
        key = (tool.name, tool.plugin, self.hidden_tools, self.only_tools)
        found = self._hides.get(key)
        if found is None:
            found = self._hides[key] = self._narrowed_away(tool)
        return found

    def _offers_now(self, tool: Tool) -> bool:
        try:
            return tool.offered_to(self)
        except Exception as exc:  # a plugin's bug hides its own tool, never the catalogue
            _report(f"offered_when of tool {tool.name!r}", exc)
            return False

    def _narrowed_away(self, tool: Tool) -> bool:
        if self.parent is not None and self.access_to(tool) == "none":
            return True
        if self.only_tools is not None and tool.plugin != CORE_PLUGIN and tool.name not in self.only_tools:
            return True
        if not self.hidden_tools:
            return False
        if tool.metadata.get("requires") in self.hidden_tools:
            return True
        covered = self.toolbox.permissions.names_covering(tool)
        return any(name in self.hidden_tools for name in covered)

    # --- tools -------------------------------------------------------------

    def _offered_tool(self, name: str) -> Tool | None:
        """``toolbox.offered_tool(name, self)``: tool ``name`` if this session
        is offered it now, else None. Whether the policy offers a tool
        depends only on the tool and the policy, so that answer is kept per
        name while both stay the same objects (it was a tenth of a small
        call's pipeline); whether this session hides it is asked each time."""
        found = self._offered.get(name)
        if found is not None and found[1] is self.policy and self.toolbox.tools.get(name) is found[0]:
            return None if self.hides(found[0]) else found[0]
        tool = self.toolbox.offered_tool(name, self)
        # (not ToolSearch, whose answer depends on the other tools offered)
        if tool is not None and name != "ToolSearch":
            self._offered[name] = (tool, self.policy)
        return tool

    def offered(self) -> list[Tool]:
        """The tools this session offers, in catalogue order."""
        return self.toolbox.offered_tools(self.policy, self)

    def catalogue(self) -> Catalogue:
        """The tools this session offers the model now, with their descriptions and schemas,
        in each model API's format (``to_anthropic``, ``to_openai``, ``to_responses``, ``to_mcp``)."""
        from ._catalogue import build_catalogue

        return build_catalogue(self)

    async def call(self, name: str, arguments: Any = None, *, call_id: str | None = None,
                   approval: Answer | None = None, timeout_s: float | None = None) -> ToolResult:
        """Run one tool call through the whole pipeline. Never raises for a
        tool's failure: that is an error result.

        ``approval``: the person's answer, given ahead (after ``decide`` said
        "ask" and a framework's approval step or a UI got the answer); it
        settles an ask instead of ``pegboard_ask``, and cannot turn a deny
        into an allow. ``timeout_s``: how long the tool may run this time, at
        most (the tool's own limit holds when it is shorter); past it the call
        is stopped and the result is an error that says so."""
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
        run_call = _PIPELINE[0] if _PIPELINE else _pipeline()[0]
        return await run_call(self, name, arguments, call_id or self.next_call_id(), approval, timeout_s)

    def stream(self, name: str, arguments: Any = None, *, call_id: str | None = None,
               approval: Answer | None = None, timeout_s: float | None = None) -> CallStream:
        """``call``, read as it runs: ``async for event in session.stream(...)``
        yields what the call emits as it comes (``event.text``: a line of a
        command's output, a progress message), and background work the call
        started until it ends; then ``stream.result`` is the call's result."""
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
        from ._streams import CallStream

        return CallStream(self, name, arguments, call_id=call_id or self.next_call_id(), approval=approval,
                          timeout_s=timeout_s)

    @cached_property
    def sync(self) -> SyncSession:
        """This session for code that cannot await (scripts, notebooks, a
        framework's synchronous ``invoke``): ``session.sync.call(...)`` blocks
        until the call's result, also where an event loop is running."""
        from ._sync import SyncSession

        return SyncSession(self)

    @property
    def pending(self) -> PendingCalls:
        """This session's calls waiting for a person's answer (``Answer.later()``):
        ``list()``, ``get(id)``, ``await resolve(id, answer)``."""
        found = self.__dict__.get("_pending")
        if found is None:
            from ._pending import PendingCalls

            found = self.__dict__["_pending"] = PendingCalls(self)
        return found

    async def decide(self, name: str, input: Any = None) -> Decision:
        """The permission decision for a call, its reason and source, without
        running anything or asking anyone: ``.decision`` is "allow", "deny"
        or "ask" (a person, or in auto mode the classifier, would be asked).
        The input is checked as a call's would be: an input the tool would
        refuse is a deny from "validation"."""
        from ._deciding import decide_call

        return decide_call(self, name, input)

    def next_call_id(self) -> str:
        """A call id unique in this session ("c1", "c2", ...) for calls the
        caller gave none; a counter, because uuid4 costs more than a call's
        whole permission decision."""
        return f"c{next(self._call_ids)}"

    async def call_batch(self, calls: Iterable[tuple[str, Any] | tuple[str, Any, str]]) -> list[ToolResult]:
        """The calls of one model reply, as ``(name, arguments)`` or
        ``(name, arguments, call_id)``: read-only ones side by side (at most
        10 at once, 32 for tools that proved cheap), the rest alone and in
        order; results in call order."""
        run_batch = _PIPELINE[1] if _PIPELINE else _pipeline()[1]
        return await run_batch(self, list(calls))

    @cached_property
    def tasks(self) -> BackgroundTasks:
        """The session's background tasks (``run_in_background`` calls; TaskOutput, TaskStop)."""
        # Made on first use: a session that only decides (permissions check,
        # Session.decide) imports neither the tasks nor the calls' modules.
        from ._tasks import BackgroundTasks

        return BackgroundTasks(self)

    async def aclose(self) -> None:
        """Stop the session's tasks, call ``pegboard_session_closed``, and
        delete the output spilled to files (it was only for this session's
        model; the session's other files, such as checkpoints, stay)."""
        if self.closed:
            return
        self.closed = True
        if "tasks" in self.__dict__:  # none were started when they were never made
            await self.tasks.stop_all()
        if self._data_dir is not None:
            from ._calls import RESULTS_FOLDER

            _delete_spilled(self._data_dir / RESULTS_FOLDER)
        if self.durable:
            try:
                from ._sessions import SessionRecords

                SessionRecords(self.toolbox).touch(self.id)
            except Exception as exc:  # the record only says when it was last used
                _report(f"recording when session {self.id} was last used", exc)
        async for outcome in self.toolbox.hooks.aeach("pegboard_session_closed", session=self,
                                                     own_context=self.toolbox.context_for):
            if outcome.error is not None:  # one plugin's cleanup must not skip the others'
                _report(f"pegboard_session_closed of plugin {outcome.plugin!r}", outcome.error)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# (run_call, run_batch), imported at the first call, not with the session
# (the pipeline brings asyncio), and kept: an import statement run at every
# call costs more than a ToolContext.
_PIPELINE: list[Any] = []


def _pipeline() -> list[Any]:
    from ._pipeline import run_batch, run_call

    _PIPELINE[:] = [run_call, run_batch]
    return _PIPELINE


def _delete_spilled(folder: Path) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    except OSError as exc:
        _report(f"deleting the spilled output in {folder}", exc)
        return
    for name in names:
        try:
            os.unlink(folder / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            _report(f"deleting the spilled output in {folder}", exc)
    try:
        folder.rmdir()
    except OSError as exc:
        _report(f"deleting the spilled output in {folder}", exc)

"""A session: what lasts across the calls of one agent conversation, and
what drives the engine for it (calls, decisions, the catalogue, grants,
children). What it holds is ``SessionState`` (core/_engine/session_state.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._api.decisions import Answer, Decision, Grant, Rule
from .._util.errors import report_failure as _report
from .._api.levels import ACCESSES, Access
from .._api.policy import clamp_policy
from .session_state import SessionState
from .._api.tools import ToolResult
from .._util.path_facts import is_within

if TYPE_CHECKING:
    from .._api.catalogue import Catalogue
    from .._api.decisions import CompiledRule, DecisionKind
    from .._services.pending import PendingQueue
    from .._api.plugin_session import PluginSession
    from .streams import CallStream
    from .sync_facade import SyncSession
    from .._api.tasks import BackgroundTasks
    from .._api.tools import Tool

__all__ = ["Session"]


class Session(SessionState):
    """One agent conversation: ``call`` and ``call_batch`` run tools through
    the pipeline, ``decide`` decides without running, ``catalogue`` is what
    the model is offered, ``child`` makes a sub-agent's session; what it
    holds (working directories, mode, grants, notes, per-plugin state) is
    ``SessionState``'s. Two sessions never share any of these.

    Plugins see it as a ``PluginSession``; hosts make one with ``Toolbox.session``.
    """

    parent: Session | None
    """The session this one was made from (``child``); None for a top session."""

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
        return Grant(self, compiled, self._revoke)

    def rule_for(self, behavior: DecisionKind, tool: str, input: Mapping[str, Any]) -> CompiledRule | None:
        """The first ``behavior`` rule that would decide a call of ``tool``
        with ``input`` here: config layers and this session's grants, rules
        for the tool's group and for names it declares included."""
        return self.toolbox.permissions.rule_for(behavior, tool, input, self)

    def rules_for(self, behavior: DecisionKind, tool: str) -> tuple[CompiledRule, ...]:
        """Every ``behavior`` rule written for ``tool`` by name (config layers, then this session's grants):
        the same tuple while they are unchanged (see ``PermissionRequest.rules_for``)."""
        granted = self.grant_index(behavior).get(tool) if self.has_grants() else None
        return self.toolbox.permissions.rules_for(behavior, tool, granted)

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

        granted = self._granted(access or {})
        if working_dirs is not None:
            dirs = tuple(dict.fromkeys(Path(os.path.realpath(self.root / Path(d))) for d in working_dirs))
            for d in dirs:
                if not d.is_dir():
                    raise ValueError(f"{d} is not a directory")
                if not any(is_within(d, Path(os.path.realpath(mine))) for mine in self.working_dirs):
                    raise ValueError(f"{d} is not within this session's working directories")
            if not dirs:
                raise ValueError("working_dirs: give at least one directory")
        else:
            dirs = self.working_dirs
        child = Session(self.toolbox, clamp_policy(mode, self.policy.name) if mode else self.policy, session_id,
                        working_dirs=dirs)
        if session_id is not None and self.durable:
            self.toolbox.make_durable(child, session_id, self.id)
        child.parent, child.parent_id = self, self.id
        child.label = label
        child.granted_access = granted
        child.client = self.client
        child.hidden_tools = self.hidden_tools | frozenset(hide)
        if only is not None:
            wanted = frozenset(only)
            child.only_tools = wanted if self.only_tools is None else self.only_tools & wanted
        else:
            child.only_tools = self.only_tools
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

    def delete_child(self, session_id: str) -> bool:
        """Delete a durable session made from this one (``child(session_id=...)``),
        the sessions made from it, and what plugins keep for them. False when
        the store records no such child of this session (another session's
        children are never touched)."""
        from .session_records import SessionRecords

        records = SessionRecords(self.toolbox)
        if records.parent_of(session_id) != self.id:
            return False
        deleted, problems = records.delete([session_id])
        for problem in problems:
            _report(f"deleting session {session_id}", RuntimeError(problem))
        return session_id in deleted

    def offered(self) -> list[Tool]:
        """The tools this session offers, in catalogue order."""
        return self.toolbox.offered_tools(self.policy, self)

    def catalogue(self) -> Catalogue:
        """The tools this session offers the model now, with their descriptions and schemas,
        in each model API's format (``to_anthropic``, ``to_openai``, ``to_responses``, ``to_mcp``)."""
        return self.toolbox.catalogue(self)

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
        from .streams import CallStream

        return CallStream(self, name, arguments, call_id=call_id or self.next_call_id(), approval=approval,
                          timeout_s=timeout_s)

    @cached_property
    def sync(self) -> SyncSession:
        """This session for code that cannot await (scripts, notebooks, a
        framework's synchronous ``invoke``): ``session.sync.call(...)`` blocks
        until the call's result, also where an event loop is running."""
        from .sync_facade import SyncSession

        return SyncSession(self)

    @property
    def pending(self) -> PendingQueue:
        """This session's calls waiting for a person's answer (``Answer.later()``):
        ``list()``, ``get(id)``, ``await resolve(id, answer)``."""
        found = self.__dict__.get("_pending")
        if found is None:
            from .._services.pending import PendingQueue

            found = self.__dict__["_pending"] = PendingQueue(self)
        return found

    async def decide(self, name: str, input: Any = None) -> Decision:
        """The permission decision for a call, its reason and source, without
        running anything or asking anyone: ``.decision`` is "allow", "deny"
        or "ask" (a person, or in auto mode the classifier, would be asked).
        The input is checked as a call's would be: an input the tool would
        refuse is a deny from "validation"."""
        from .arguments import decide_call

        return decide_call(self, name, input)

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
        from .._api.tasks import BackgroundTasks

        return BackgroundTasks(self.emit)

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
            from .._api.calls import RESULTS_FOLDER

            _delete_spilled(self._data_dir / RESULTS_FOLDER)
        if self.durable:
            try:
                from .session_records import SessionRecords

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
    from .pipeline import run_batch, run_call

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


if TYPE_CHECKING:
    def _is_a_plugin_session(session: Session) -> PluginSession:
        return session  # mypy (.ci/typecheck) holds the engine's Session to the contract's protocol

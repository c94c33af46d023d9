"""The permission engine: exactly one decision for every call.

Order of precedence (the first step that applies decides):

1. the policy does not offer the tool: deny;
2. a deny rule matches (any config layer, the system policy, a grant): deny;
3. a plugin votes deny (a plugin that raises, or returns something that is
   not a ``Vote``, counts as deny): deny;
4. a plugin casts a firm ask (protected paths): ask where the policy can ask
   a person; deny in bypassPermissions and where no one is asked;
5. an ask rule matches: ask where the policy can ask a person, else deny;
6. an allow rule or a grant matches: allow;
7. meka's ``ask`` level: every remaining call asks;
8. the plugins' votes, ask beating allow; without votes, a read-only tool
   runs, and a changing one is settled like an ask (the levels run it: its
   declared level is the permission);
9. an unsettled ask becomes what the policy says (``Policy.on_ask``): ask
   a person, the classifier first (auto), deny (dontAsk), allow (bypass),
   or allow only read-only tools (the levels).

An ask then goes to the classifier (auto, only for step 8 asks), then the
host's ``pegboard_ask``; with no host it is a deny that says how to allow the
call. Nothing after step 3 can turn a deny into an allow: the classifier and
the host see only asks.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from ..._loading.config import RULE_KEYS, ConfigError, Layer, Settings, config_dir, layer_cache_dir
from ..._api.decisions import GROUP_SEPARATOR, Answer, CompiledRule, Decision, PermissionRequest, Rule, ToolNamespace, Vote
from ..._loading.grants import append_grant
from ..._loading.hooks import bind_named
from ..._loading.hooks import call as call_hook
from ..._loading.layer_cache import mark_rules_checked, read_compiled, rules_checked, write_compiled
from .lazy_rules import (MIN_RULES, DeferredLayer, Saved, Segment, class_name, fingerprint, rule_lists,
                         rule_set_key)
from ..._api.matchers import NameMatcher
from ..._util.errors import short_error
from ..._api.policy import Policy, clamp_policy, policy_for
from .protected import Protection, protected_patterns
from ..tracing import optional_span
from ..._loading.trust import project_grants_file
from ..._util.nearest import nearest

if TYPE_CHECKING:
    from ..._api.clients import Client
    from ..._api.plugin_session import PluginSession
    from ..session import Session
    from ..toolbox import Toolbox

__all__ = ["CompiledRule", "PermissionEngine", "SCOPES"]

SCOPES = ("session", "project", "user")


class _Unusable:
    """A remembered deny or ask rule that failed when it was finally compiled:
    it applies to every call it covers (fail closed)."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why

    def matches(self, request: PermissionRequest) -> bool:
        return True

    def describe(self) -> str:
        return f"every call (the rule could not be compiled: {self.why})"


def _remembered(layer: Layer) -> bool:
    """Whether a layer's rules may be remembered as checked (``_layercache``):
    a file of the person's own, not the system policy."""
    if layer.path is None or layer.name == "policy":
        return False
    try:
        return os.stat(layer.path).st_uid == os.geteuid()
    except OSError:
        return False


class _Group:
    """Rules of one behavior and tool whose matchers share a class that can
    ``combine`` them: one lookup instead of one call per rule.

    The protocol, optional for plugins: a matcher class may define
    ``combine(matchers) -> object`` (a classmethod) returning an object with
    ``first_match(request) -> int | None``: the index of a matcher in
    ``matchers`` that matches, or None. It must agree with calling each
    matcher's ``matches``; the engine falls back to that when ``combine``
    raises.
    """

    __slots__ = ("rules", "combined")

    def __init__(self, rules: list[CompiledRule], combined: Any):
        self.rules = rules
        self.combined = combined


def _plan(rules: list[CompiledRule], segments: Iterable[Segment] = ()) -> list[CompiledRule | _Group]:
    """Rules of one behavior and name as the engine tries them: those whose
    matchers share a class with ``combine`` as one group, the rest one by
    one. The rules of a deferred layer's ``segments`` are grouped apart
    from the others, so that what a group kept of them in an earlier
    process (``Segment.saved_group``) describes exactly its matchers."""
    origin = {id(c): (segment, position) for segment in segments
              for position, c in enumerate(segment.compiled or ()) if c is not None}
    units: list[CompiledRule | _Group] = []
    by_group: dict[tuple[type, Segment | None], list[CompiledRule]] = {}
    for compiled in rules:
        kind = type(compiled.matcher)
        if callable(getattr(kind, "combine", None)):
            found = origin.get(id(compiled))
            by_group.setdefault((kind, found[0] if found is not None else None), []).append(compiled)
        else:
            units.append(compiled)
    for (kind, segment), group in by_group.items():
        if len(group) == 1:
            units.append(group[0])
            continue
        matchers = [c.matcher for c in group]
        combined = None
        positions: tuple[int, ...] = ()
        if segment is not None:
            positions = tuple(origin[id(c)][1] for c in group)
            saved = segment.saved_group(kind, positions)
            if saved is not None:
                try:
                    combined = kind.combine(matchers, saved=saved)  # type: ignore[attr-defined]
                except Exception:
                    combined = None  # what was kept does not fit: combined afresh
        if combined is None:
            try:
                combined = kind.combine(matchers)  # type: ignore[attr-defined]
            except Exception:
                units.extend(group)  # a plugin's combine failed: one at a time is slower, not wrong
                continue
        if segment is not None:
            segment.groups[(kind, positions)] = combined
        units.append(_Group(group, combined))
    return units


class _ToolEntry:
    """What the engine keeps per tool (``PermissionEngine._tool_entry``): its
    deny, ask and allow units, and whether the last policy asked offers it
    (a policy's levels and the tool's required level are fixed for a toolbox)."""

    __slots__ = ("tool", "units", "offered", "voter")

    def __init__(self, tool: Any, units: tuple[tuple[CompiledRule | _Group, ...], ...]) -> None:
        self.tool = tool
        self.units = units
        self.offered: tuple[Any, bool] = (None, False)
        # the tool's own vote bound to its plugin's config and context (None: not bound yet)
        self.voter: Callable[[PermissionRequest], Any] | None = None


class PermissionEngine:
    """Rules compiled once per toolbox; ``evaluate`` and ``authorize`` per call."""

    def __init__(self, toolbox: Toolbox):
        self.toolbox = toolbox
        self.settings: Settings = toolbox.settings
        self.inactive: list[tuple[Rule, str, str]] = []  # (rule, layer, why)
        # The index as matched: per behavior and tool, rules with combinable
        # matchers grouped (built on first use, dropped when a rule is added).
        self._plans: dict[str, dict[str, list[CompiledRule | _Group]]] = {"allow": {}, "ask": {}, "deny": {}}
        # rules_for's answers without grants, per (behavior, tool name): dropped when a rule is added
        self._rules_by_name: dict[tuple[str, str], tuple[CompiledRule, ...]] = {}
        # Per tool name: (the tool, its deny, ask and allow units under every
        # name that covers it, in _match's order), for sessions without
        # grants; made from _plans, and dropped with it (see _tool_units).
        self._by_tool: dict[str, _ToolEntry] = {}
        self._by_tool_plans: dict[str, dict[str, list[CompiledRule | _Group]]] = self._plans
        self._by_tool_made = 0  # counts _forget_tool_units: a tuple made meanwhile is not kept
        # The tool namespaces plugins declared (pegboard_tool_namespaces): name -> (namespace, plugin).
        self.namespaces: dict[str, tuple[ToolNamespace, str]] = toolbox.plugins.namespaces
        # Every rule in order: compiled, or a layer whose rules passed their
        # checks at an earlier load and are compiled when first used (_lazyrules).
        self._order: list[CompiledRule | DeferredLayer] = []
        self._uncompiled: set[tuple[str, str]] = set()  # (behavior, tool) in the index with deferred rules
        # The deferred segments a (behavior, name)'s rules came from, once compiled (for _plan).
        self._segments: dict[tuple[str, str], list[Segment]] = {}
        # Remembered rules that failed when they were finally compiled (fail closed; see _lazyrules).
        self.late_problems: list[str] = []
        self._names = _KnownNames(toolbox, self.namespaces)
        # Rules naming no tool this toolbox knows: (rule, nearest known name or None).
        self._unknown: list[tuple[Rule, str | None]] = []
        problems: list[str] = []
        base: bytes | None = None
        for layer in self.settings.layers:
            lists = rule_lists(layer)
            key = None
            if lists is not None and sum(len(t) for _, t in lists) >= MIN_RULES and _remembered(layer):
                base = base or fingerprint(toolbox)
                key = rule_set_key(base, layer, lists)
                if key is not None and rules_checked(layer_cache_dir(), layer.path, key):  # type: ignore[arg-type]
                    self._order.append(DeferredLayer(layer, lists, key))
                    continue
            found = self._compile_layer(layer)
            problems += found
            if key is not None and not found:
                mark_rules_checked(layer_cache_dir(), layer.path, key)  # type: ignore[arg-type]
        if not any(isinstance(item, DeferredLayer) for item in self._order):
            self._index  # nothing deferred: as cheap to index now  # noqa: B018
        # [clients.<id>] rules: compiled now (a mistake is the operator's, said at load), given to
        # each session of that client as rules of its own (Toolbox.session(client=...)).
        self._client_rules: dict[str, list[CompiledRule]] = {}
        for layer in self.settings.layers:
            problems += self._compile_client_layer(layer)
        patterns, pattern_problems = protected_patterns(
            self.settings, [pattern for pattern, _ in toolbox.plugins.protected_paths])
        problems += pattern_problems
        if problems:
            raise ConfigError(problems)
        self.protected_patterns = patterns
        self.protection = Protection(patterns)
        """Which resolved paths are protected, and which lie inside a session's working directories."""
        audit = self.settings.core.audit
        if audit.enabled:
            from ..._services.audit import AuditLog
            from ..._services.store import CORE_COMPONENT

            self.audit: Any = AuditLog(toolbox.plugins.stores(CORE_COMPONENT), audit.preview_chars,
                                       audit.max_age_days, audit.max_rows)
        else:
            self.audit = None

    def _compile_layer(self, layer: Layer) -> list[str]:
        """Parse, check and compile one layer's rules now; the problems found."""
        problems: list[str] = []
        perms = layer.data.get("permissions", {})
        if not isinstance(perms, Mapping):
            return problems
        for behavior in RULE_KEYS:
            for text in perms.get(behavior, []) or []:
                if not isinstance(text, str):
                    problems.append(f"{layer.label}: [permissions] {behavior}: {text!r} is not a string")
                    continue
                try:
                    rule = Rule.parse(text, behavior, layer.label, self.settings.root)  # type: ignore[arg-type]
                    if not self._names.knows(rule.tool):
                        self._names.judge(rule, self._unknown)
                    compiled = self.compile(rule, layer.name)
                except ValueError as exc:
                    problems.append(f"{layer.label}: [permissions] {behavior}: {_rule_error(text, exc)}")
                    continue
                if compiled is not None:
                    self._order.append(compiled)
        return problems

    def _compile_client_layer(self, layer: Layer) -> list[str]:
        problems: list[str] = []
        clients = layer.data.get("clients", {})
        if not isinstance(clients, Mapping):
            return problems
        for client_id, table in clients.items():
            if not isinstance(table, Mapping):
                continue  # the config model has said what is wrong with it
            for behavior in RULE_KEYS:
                for text in table.get(behavior, []) or []:
                    key = f"[clients.{client_id}] {behavior}"
                    if not isinstance(text, str):
                        problems.append(f"{layer.label}: {key}: {text!r} is not a string")
                        continue
                    try:
                        rule = Rule.parse(text, behavior, f"[clients.{client_id}] of {layer.label}",  # type: ignore[arg-type]
                                          self.settings.root)
                        if not self._names.knows(rule.tool):
                            self._names.judge(rule, self._unknown)
                        compiled = self.compile(rule, "client")
                    except ValueError as exc:
                        problems.append(f"{layer.label}: {key}: {_rule_error(text, exc)}")
                        continue
                    if compiled is not None:
                        self._client_rules.setdefault(client_id, []).append(compiled)
        return problems

    def client_mode(self, client: Client | None) -> str | None:
        """The mode ``[clients.<id>] mode`` sets for ``client`` (None: none set, or no client)."""
        own = self.settings.core.clients.get(client.id) if client is not None else None
        return own.mode if own is not None else None

    def client_rules(self, client_id: str) -> list[CompiledRule]:
        """The rules ``[clients.<client_id>]`` sets, compiled, in the layers' order."""
        return list(self._client_rules.get(client_id, ()))

    # Built on first use when a layer's rules were deferred: a load whose
    # rules passed their checks before does no work per rule. Lazy
    # attributes rather than __getattr__, which would send every attribute
    # the engine reads at every decision through a slower lookup (it cost a
    # tenth of a decision's instructions).
    @cached_property
    def _index(self) -> dict[str, dict[str, list[CompiledRule | Segment]]]:
        index: dict[str, dict[str, list[CompiledRule | Segment]]] = {"allow": {}, "ask": {}, "deny": {}}
        for item in self._order:
            if isinstance(item, DeferredLayer):
                for segment in item.group():
                    index[segment.behavior].setdefault(segment.tool, []).append(segment)
                    self._uncompiled.add((segment.behavior, segment.tool))
            else:
                index[item.rule.behavior].setdefault(item.rule.tool, []).append(item)
        return index

    @cached_property
    def rules(self) -> list[CompiledRule]:
        """Every rule in force, compiled, in the layers' order (deferred ones compiled now)."""
        for behavior, by_tool in self._index.items():
            for tool in list(by_tool):
                self._compiled(behavior, tool)
        return [c for item in self._order
                for c in (item.compiled_in_order() if isinstance(item, DeferredLayer) else (item,))]

    @property
    def unknown(self) -> list[tuple[Rule, str | None]]:
        """Rules naming no tool this toolbox knows, with the nearest known name
        (for ``pegboard doctor``); a deferred layer's are worked out here."""
        for item in self._order:
            if not isinstance(item, DeferredLayer) or item.judged:
                continue
            for segment in item.group():
                if self._names.knows(segment.tool):
                    continue
                for text in segment.texts:
                    try:
                        self._names.judge(Rule.parse(text, segment.behavior, item.layer.label,  # type: ignore[arg-type]
                                                     self.settings.root), self._unknown)
                    except ValueError as exc:
                        self.late_problems.append(f"{item.layer.label}: [permissions] {segment.behavior}: "
                                                  f"{_rule_error(text, exc)}")
            item.judged = True
        return self._unknown

    def _compiled(self, behavior: str, key: str) -> list[CompiledRule]:
        """The rules of ``behavior`` indexed under ``key``, every deferred one compiled now."""
        items = self._index[behavior].get(key)
        if items is None:
            return []
        if (behavior, key) not in self._uncompiled:
            return items  # type: ignore[return-value]
        self._uncompiled.discard((behavior, key))
        out: list[CompiledRule] = []
        for item in items:
            if isinstance(item, Segment):
                self._read_saved(item)
                compiler = self._compiler(item.tool)
                item.compiled = [self._compile_late(item, i, text, compiler) for i, text in enumerate(item.texts)]
                out += [c for c in item.compiled if c is not None and c.rule.tool == key]
                self._segments.setdefault((behavior, key), []).append(item)
            else:
                out.append(item)
        self._index[behavior][key] = out  # type: ignore[assignment]
        return out

    # --- the compiled rules kept between processes (the rule cache protocol) ---

    def _read_saved(self, segment: Segment) -> None:
        """What an earlier process kept of a deferred segment's compiled rules, if anything."""
        layer = segment.layer
        if segment.key is None or layer.path is None:
            return
        found = read_compiled(layer_cache_dir(), layer.path, segment.key, segment.behavior, segment.tool)
        if found is not None:
            rules, groups = found
            segment.saved = Saved(rules if rules is not None and len(rules) == len(segment.texts) else [],
                                  {(name, positions): data for name, positions, data in groups})

    def _keep_compiled(self, segments: Iterable[Segment]) -> None:
        """Keep what the segments' matchers and groups save, for the next
        process, unless it was kept already (a process that built them from
        what was kept has nothing new to say)."""
        for segment in segments:
            if segment.key is None or segment.layer.path is None or segment.compiled is None:
                continue
            kept = segment.saved
            if kept is not None and kept.rules and all(
                    (class_name(kind), positions) in kept.groups for (kind, positions), combined in segment.groups.items()
                    if callable(getattr(combined, "save", None))):
                continue
            rules = [_saved(c.matcher) if c is not None else None for c in segment.compiled]
            groups = [(class_name(kind), positions, data) for (kind, positions), combined in segment.groups.items()
                      if (data := _saved(combined)) is not None]
            if not groups and all(r is None for r in rules):
                continue  # nothing here saves anything
            if write_compiled(layer_cache_dir(), segment.layer.path, segment.key, segment.behavior, segment.tool,
                              rules, groups):
                segment.saved = Saved(rules, {(name, positions): data for name, positions, data in groups})

    def _compile_late(self, segment: Segment, index: int, text: str,
                      compiler: tuple[str | None, bool, list[tuple[Any, Any]]]) -> CompiledRule | None:
        """One remembered rule, compiled at its first use (from what its
        matcher saved in an earlier process, when it did). It passed this
        compile before; should it fail now, it fails closed."""
        layer, behavior = segment.layer, segment.behavior
        try:
            rule = Rule.parse(text, behavior, layer.label, self.settings.root)  # type: ignore[arg-type]
            if rule.tool != segment.tool:  # only a damaged cache groups a rule under another tool
                compiler = self._compiler(rule.tool)
            saved = segment.saved_rule(index)
            try:
                compiled = self._compile_with(compiler, rule, layer.name, saved) if saved is not None else None
            except ValueError:
                saved = None  # what was kept does not fit: compiled afresh
            if saved is None:
                compiled = self._compile_with(compiler, rule, layer.name, None)
        except ValueError as exc:
            self.late_problems.append(f"{layer.label}: [permissions] {behavior}: {_rule_error(text, exc)}")
            if behavior == "allow":
                return None
            body = text.strip()
            spec = (body[len(segment.tool) + 1:-1] if body.startswith(segment.tool + "(") and body.endswith(")")
                    else None if body == segment.tool else body)
            rule = Rule(segment.tool, spec, behavior, layer.label, self.settings.root)  # type: ignore[arg-type]
            return CompiledRule(rule, _Unusable(str(exc)), layer.name)
        if compiled is not None and rule.tool != segment.tool:
            # not where it was grouped (only a damaged cache does this): where it belongs
            self._index[behavior].setdefault(rule.tool, []).append(compiled)
            self._plans[behavior].pop(rule.tool, None)
            self._rules_by_name.pop((behavior, rule.tool), None)
            self._forget_tool_units()
        return compiled

    # --- policies ----------------------------------------------------------

    def session_policy(self, name: str | None, client: Client | None = None) -> Policy:
        """The policy a session gets when it asks for mode or level ``name``
        (None: ``[permissions] mode``): ``ConfigError`` when
        ``disable_bypass_permissions`` forbids it; clamped under the system
        policy file's own ``mode``, if it sets one (a ceiling as well as the
        default: no one can run wider than the operator's policy). Both
        ``Toolbox.session`` and ``Session.set_mode`` come through here.

        For a ``client``'s session, the mode its ``[clients.<id>]`` table
        sets (``client_mode``) is a ceiling, and so is the level its
        credential allows (``client.level``)."""
        perms = self.settings.core.permissions
        own = self.client_mode(client)
        requested = policy_for(name or perms.mode)
        if requested.bypass and perms.disable_bypass_permissions:
            raise ConfigError([f"{requested.name} is disabled by [permissions] disable_bypass_permissions "
                               f"in {self.settings.source_of('permissions', 'disable_bypass_permissions')}"])
        ceiling = _policy_layer_mode(self.settings)
        policy = clamp_policy(requested.name, ceiling) if ceiling is not None else requested
        for limit in (own, client.level if client is not None else None):
            if limit is not None:
                policy = clamp_policy(policy.name, limit)
        return policy

    # --- rules -------------------------------------------------------------

    def check_new_rule(self, rule: Rule) -> None:
        """``ValueError`` with why, for a rule about to be added to a config
        file (``pegboard permissions add``): it names no tool known here
        (the nearest is named; a tool of a declared namespace, such as an
        MCP server's not yet listed, passes), or its plugin's matcher cannot
        parse it."""
        if not self._names.knows(rule.tool) and self.namespace_of(rule.tool) is None:
            unknown: list[tuple[Rule, str | None]] = []
            self._names.judge(rule, unknown)  # a name off only in case raises here
            meant = unknown[0][1] if unknown else None
            raise ValueError(f"no tool is called {rule.tool!r}" + (f"; did you mean {meant!r}?" if meant else
                                                                   " (`pegboard tools list` shows them)"))
        self.compile(rule)

    def compile(self, rule: Rule, layer: str = "session", saved: Any = None) -> CompiledRule | None:
        """Compile a rule through the plugin that owns its tool.

        ``ValueError`` when the specifier does not parse (or its plugin fails
        on it, or defines no specifiers); None, kept as inactive, when no
        loaded plugin provides the tool. Only the owner is asked about its
        own tool's specifiers: another plugin must not be able to answer
        for it (a matcher that never matches would disarm a deny rule).
        ``saved``: what the owner's matcher saved for this rule in an
        earlier process (the rule cache protocol), handed to its hook.
        """
        return self._compile_with(self._compiler(rule.tool), rule, layer, saved)

    def _compiler(self, tool: str) -> tuple[str | None, bool, list[tuple[Any, Any]]]:
        """What compiling a rule on ``tool`` asks: its owner, whether the
        owner is loaded, and the ``pegboard_rule_matcher`` implementations
        to ask with their contexts (worked out once for a deferred segment's
        rules, which all name one tool)."""
        owner = self.toolbox.owner_of(tool)
        impls = self.toolbox.hooks.implementations("pegboard_rule_matcher")
        if owner is not None:
            if self.toolbox.plugins.pm.get_plugin(owner) is None:
                return owner, False, []
            impls = [i for i in impls if i.plugin_name == owner]
        asked = [(impl, context) for impl in impls if (context := self.toolbox.context_for(impl.plugin_name))]
        return owner, True, asked

    def _compile_with(self, compiler: tuple[str | None, bool, list[tuple[Any, Any]]], rule: Rule, layer: str,
                      saved: Any) -> CompiledRule | None:
        owner, loaded, asked = compiler
        if not loaded:
            self.inactive.append((rule, layer, f"plugin {owner!r}, which provides {rule.tool}, is not loaded"))
            return None
        arguments = {"rule": rule, "context": None, "saved": saved}
        for impl, context in asked:
            arguments["context"] = context
            try:
                matcher = call_hook(impl, arguments)
            except ValueError:
                raise
            except Exception as exc:
                raise ValueError(f"plugin {impl.plugin_name!r} failed on it: {short_error(exc)}") from None
            if matcher is None:
                continue
            if not callable(getattr(matcher, "matches", None)):
                raise ValueError(f"plugin {impl.plugin_name!r} returned {type(matcher).__name__}, "
                                 "which has no matches(request)")
            return CompiledRule(rule, matcher, layer)
        if rule.specifier is None:
            return CompiledRule(rule, self.name_matcher(rule.tool), layer)
        if owner is not None:
            raise ValueError(f"plugin {owner!r} defines no specifiers for {rule.tool}; write {rule.tool!r} "
                             "for every call of it")
        self.inactive.append((rule, layer, f"no loaded plugin provides {rule.tool}"))
        return None

    def tools_changed(self) -> None:
        """The toolbox's tools changed: forget the rules found for each tool."""
        self._forget_tool_units()

    def _add(self, compiled: CompiledRule) -> None:
        self._order.append(compiled)
        if "rules" in self.__dict__:
            self.rules.append(compiled)
        if "_index" in self.__dict__:  # else it is built from _order when first used
            behavior, tool = compiled.rule.behavior, compiled.rule.tool
            self._index[behavior].setdefault(tool, []).append(compiled)
            self._plans[behavior].pop(tool, None)
            self._forget_tool_units()
        self._rules_by_name.pop((compiled.rule.behavior, compiled.rule.tool), None)

    def namespace_of(self, name: str) -> tuple[ToolNamespace, str] | None:
        """The declared namespace a tool or rule name lies in, with the
        plugin that declared it, or None."""
        head, sep, _ = name.partition(GROUP_SEPARATOR)
        return self.namespaces.get(head) if sep else None

    def group_namespace(self, name: str) -> ToolNamespace | None:
        """The namespace of which ``name`` names a whole group (``mcp__server``), or None."""
        found = self.namespace_of(name)
        return found[0] if found is not None and found[0].group_named(name) is not None else None

    def name_matcher(self, name: str) -> NameMatcher:
        """The matcher of a rule without a specifier naming ``name``."""
        return NameMatcher(name, self.group_namespace(name))

    def _units(self, behavior: str, key: str) -> list[CompiledRule | _Group]:
        plans = self._plans[behavior]
        units = plans.get(key)
        if units is None:
            rules = self._compiled(behavior, key)
            segments = self._segments.get((behavior, key), ())
            units = plans[key] = _plan(rules, segments)
            if segments:
                self._keep_compiled(segments)
        return units

    def rule_for(self, behavior: str, tool: str, input: Mapping[str, Any],
                 session: PluginSession) -> CompiledRule | None:
        """The first ``behavior`` rule covering a call of ``tool`` with
        ``input`` (None also when no loaded plugin provides ``tool``).

        For a plugin whose tool does what another's would: the shell asks
        whether ``Read`` rules deny a file ``cat`` would print.
        """
        found = self.toolbox.tools.get(tool)
        if found is None:
            return None
        return self._match(behavior, PermissionRequest(tool=found, input=input, session=session,
                                                       policy=session.policy))

    def rules_for(self, behavior: str, tool: str,
                  granted: Sequence[CompiledRule] | None = None) -> tuple[CompiledRule, ...]:
        """Every ``behavior`` rule written for ``tool`` by name: the config
        layers', then ``granted`` (a session's grants for it; not rules for an
        alias of it). Without grants, the same tuple until a rule is added: a
        plugin keeps what it derives from the rules while it gets the same
        object back (the shell's sandbox plan, web's unlocked hosts), so a
        decision costs nothing per rule."""
        kept = self._rules_by_name.get((behavior, tool))
        if kept is None:
            kept = self._rules_by_name[(behavior, tool)] = tuple(self._compiled(behavior, tool))
        return (*kept, *granted) if granted else kept

    def _match(self, behavior: str, request: PermissionRequest) -> CompiledRule | None:
        index = self._index[behavior]
        session: Session = request.session  # type: ignore[assignment]  # the engine's own
        grants = session.grant_index(behavior)
        # Most calls name a tool without rules of this behavior: one lookup each.
        for key in self.toolbox.rule_keys(request.tool, behavior):
            if key in index:
                for unit in self._units(behavior, key):
                    hit = self._try(unit, behavior, request)
                    if hit is not None:
                        return hit
            if grants and key in grants:
                for compiled in grants[key]:
                    hit = self._try(compiled, behavior, request)
                    if hit is not None:
                        return hit
        return None

    def _forget_tool_units(self) -> None:
        self._by_tool.clear()
        self._by_tool_made += 1

    def _tool_units(self, tool: Any) -> tuple[tuple[CompiledRule | _Group, ...], ...]:
        """(deny, ask, allow): the units ``_match`` would try for a call of
        ``tool`` in a session without grants, each behavior's in its order
        (its names in turn, each name's units), made once per tool rather
        than looked up name by name at every decision."""
        return self._tool_entry(tool).units

    def _tool_entry(self, tool: Any) -> _ToolEntry:
        found = self._by_tool.get(tool.name)
        if found is not None and found.tool is tool and self._by_tool_plans is self._plans:
            return found
        if self._by_tool_plans is not self._plans:  # replaced whole (the tests and the bench do)
            self._forget_tool_units()
            self._by_tool_plans = self._plans
        while True:
            made = self._by_tool_made
            units = tuple(
                tuple(unit for key in self.toolbox.rule_keys(tool, behavior) if key in self._index[behavior]
                      for unit in self._units(behavior, key))
                for behavior in ("deny", "ask", "allow"))
            # Compiling deferred rules just now may have put one under another
            # name (_compile_late) after that name's units were taken: made
            # again, from rules all compiled now.
            if made == self._by_tool_made:
                break
        entry = self._by_tool[tool.name] = _ToolEntry(tool, units)
        return entry

    def _first_hit(self, units: tuple[CompiledRule | _Group, ...], behavior: str,
                   request: PermissionRequest) -> CompiledRule | None:
        """``_match`` over a tool's units (``_tool_units``): the same answer in a session without grants."""
        for unit in units:
            # _try's usual case inline (a call less per unit); anything raised goes to _try
            try:
                if isinstance(unit, _Group):
                    index = unit.combined.first_match(request)
                    if index is not None:
                        return unit.rules[index]
                elif unit.matcher.matches(request):
                    return unit
            except Exception as exc:
                hit = self._failed(unit, behavior, request, exc)
                if hit is not None:
                    return hit
        return None

    def _may_match(self, request: PermissionRequest) -> bool:
        """Whether ``_match`` could find a rule of any behavior for this
        call: a name it looks under is indexed, or the session holds grants.
        (Deny and ask rules are looked up under every name allow rules are, and more.)"""
        session: Session = request.session  # type: ignore[assignment]  # the engine's own
        if session.has_grants():
            return True
        index = self._index
        deny, ask, allow = index["deny"], index["ask"], index["allow"]
        for key in self.toolbox.rule_keys(request.tool, "deny"):
            if key in deny or key in ask or key in allow:
                return True
        return False

    @staticmethod
    def _try(unit: CompiledRule | _Group, behavior: str, request: PermissionRequest) -> CompiledRule | None:
        try:
            if isinstance(unit, _Group):
                index = unit.combined.first_match(request)
                return unit.rules[index] if index is not None else None
            return unit if unit.matcher.matches(request) else None
        except Exception as exc:
            return PermissionEngine._failed(unit, behavior, request, exc)

    @staticmethod
    def _failed(unit: CompiledRule | _Group, behavior: str, request: PermissionRequest,
                exc: Exception) -> CompiledRule | None:
        """What a rule whose matcher raised ``exc`` decides: a deny or ask
        rule that cannot be checked still applies (fail closed); an allow
        rule that cannot be checked does not."""
        first = unit.rules[0] if isinstance(unit, _Group) else unit
        if behavior != "allow":
            return first
        request.extra.setdefault("rule_errors", []).append(f"{first.where}: {short_error(exc)}")
        return None

    # --- deciding ----------------------------------------------------------

    def _voters(self) -> list[tuple[str, Callable[[PermissionRequest], Any]]]:
        """Each ``pegboard_permission`` implementation as (plugin, call with
        the request), its plugin's config and context bound once, not per
        decision."""
        return self.toolbox.hooks.bound("pegboard_permission", "request", self._vote_arguments)

    def _vote_arguments(self, plugin: str) -> dict[str, Any]:
        return {"config": self.toolbox.plugin_config(plugin), "context": self.toolbox.context_for(plugin)}

    def _own_voter(self, entry: _ToolEntry) -> Callable[[PermissionRequest], Any]:
        """The tool's own ``vote``, bound once to its plugin's config and context."""
        voter = entry.voter
        if voter is None:
            voter = entry.voter = self._bind_own_voter(entry.tool)
        return voter

    def _bind_own_voter(self, tool: Any) -> Callable[[PermissionRequest], Any]:
        if tool.vote is None:
            return _abstain
        try:
            return bind_named(tool.voter, "request", self._vote_arguments(tool.plugin))
        except Exception as exc:
            # Fail closed: a voter that cannot be found or bound denies every call of its tool.
            why = f"the vote of {tool.name} cannot be used: {short_error(exc)}"
            return lambda request: Vote.deny(why)

    def votes(self, request: PermissionRequest, entry: _ToolEntry | None = None) -> list[tuple[str, Vote]]:
        """The tool's own vote, then every ``pegboard_permission`` vote; a failure to vote counts as a deny."""
        out: list[tuple[str, Vote]] = []
        own = self._own_voter(entry if entry is not None else self._tool_entry(request.tool))
        if own is not _abstain:
            _collect(out, request.tool.plugin, own, request)
        for plugin, voter in self._voters():
            _collect(out, plugin, voter, request)
        return out

    def evaluate(self, request: PermissionRequest) -> Decision:
        """The decision before anyone is asked (no classifier, no host).

        "ask" here means: a person (or auto's classifier) will be consulted.
        """
        policy = request.policy
        tool = request.tool
        entry = self._tool_entry(tool)
        offered = entry.offered  # (policy, whether it offers the tool) for the last policy asked
        if offered[0] is not policy:
            offered = entry.offered = (policy, policy.offers_tool(self.toolbox.required_level(tool),
                                                                  tool.read_only))
        if not offered[1]:
            required = self.toolbox.required_level(tool)
            where = f"{policy.kind} {policy.name}"
            why = "only read-only tools are offered" if policy.read_only_tools and not tool.read_only \
                else f"it needs {required}"
            return Decision("deny", f"{tool.name} is not offered at {where} ({why})", where)
        session: Session = request.session  # type: ignore[assignment]  # the engine's own
        if session.hides(tool):
            where = "sub-agent " + " > ".join(session.chain)
            return Decision("deny", f"{tool.name} is not offered to this sub-agent", where)
        # Without grants (most sessions), each behavior's rules for this tool
        # are a tuple made once (_tool_units); with grants, looked up name by
        # name with the grants between (_match), once a rule or grant could match.
        if session.has_grants():
            deny = ask = allow = None
            ruled = self._may_match(request)
        else:
            deny, ask, allow = entry.units
            ruled = False
        if deny:
            hit = self._first_hit(deny, "deny", request)
        else:
            hit = self._match("deny", request) if ruled else None
        if hit is not None:
            return Decision("deny", f"denied by {hit.rule.text}", hit.where)
        votes = self.votes(request, entry)
        for plugin, vote in votes:
            if vote.decision == "deny":
                return Decision("deny", vote.reason, f"plugin {plugin}")
        for plugin, vote in votes:
            if vote.decision == "ask" and vote.firm:
                if policy.bypass:
                    return Decision("deny", f"{vote.reason}; {policy.name} never lets it through (protected "
                                            "paths and other firm asks are denied there)", f"plugin {plugin}")
                if not policy.prompts:
                    return Decision("deny", f"{vote.reason}; it needs a person's approval and {policy.kind} "
                                            f"{policy.name} asks no one", f"plugin {plugin}")
                return Decision("ask", vote.reason, f"plugin {plugin}", _suggestions(votes), firm=True)
        if ask:
            hit = self._first_hit(ask, "ask", request)
        else:
            hit = self._match("ask", request) if ruled else None
        if hit is not None:
            where = f"{policy.kind} {policy.name}"
            if not policy.prompts:
                return Decision("deny", f"{hit.rule.text} asks, and {where} asks no one", hit.where)
            return Decision("ask", f"{hit.rule.text} asks", hit.where, _suggestions(votes))
        if allow:
            hit = self._first_hit(allow, "allow", request)
        else:
            hit = self._match("allow", request) if ruled else None
        if hit is not None:
            return Decision("allow", f"allowed by {hit.rule.text}", hit.where)
        # (the policy's name and the suggestions are made only where a decision says them:
        # most calls are allowed by their plugin's vote, which says neither)
        if policy.ask_every_call:
            where = f"{policy.kind} {policy.name}"
            return Decision("ask", f"every call asks at {where}", where, _suggestions(votes) or (tool.name,))
        for plugin, vote in votes:
            if vote.decision == "ask":
                return self._unsettled(request, vote.reason, f"plugin {plugin}", _suggestions(votes))
        if votes:
            plugin, vote = votes[0]
            return Decision("allow", vote.reason, f"plugin {plugin}")
        where = f"{policy.kind} {policy.name}"
        if tool.read_only:
            return Decision("allow", f"{tool.name} is read-only", where)
        if policy.is_level:
            required = self.toolbox.required_level(tool)
            return Decision("allow", f"{tool.name} is offered at {where} (it needs {required})", where)
        return self._unsettled(request, f"{tool.name} may change things and no plugin vouched for this call",
                               where, (tool.name,))

    def _unsettled(self, request: PermissionRequest, reason: str, source: str,
                   suggestions: tuple[str, ...]) -> Decision:
        """A non-firm ask nobody settled: what the policy makes of it."""
        policy = request.policy
        where = f"{policy.kind} {policy.name}"
        on_ask = policy.on_ask
        if on_ask == "allow_read_only":
            on_ask = "allow" if request.tool.read_only else "deny"
        if on_ask == "allow":
            return Decision("allow", f"{reason}; {where} runs it", where)
        if on_ask == "deny":
            return Decision("deny", f"{reason}; {where} denies what it would otherwise ask."
                                    f"{self._how_to_allow(suggestions)}", source, suggestions)
        return Decision("ask", reason, source, suggestions, classifiable=True)

    def _how_to_allow(self, suggestions: tuple[str, ...]) -> str:
        if not suggestions:
            return ""
        if not self.settings.trusted:
            # The project's own allow rules would be ignored: name a file that counts.
            return (f" To allow it, add {suggestions[0]!r} to [permissions] allow in "
                    f"{config_dir() / 'config.toml'} (this folder is not trusted, so its own allow rules "
                    f"are ignored: `pegboard trust {self.settings.root}`), or run in a mode that allows it.")
        return (f" To allow it, add {suggestions[0]!r} to [permissions] allow in "
                f"{self.settings.root / '.pegboard' / 'config.toml'} (or run in a mode that allows it).")

    async def authorize(self, request: PermissionRequest, answer: Answer | None = None) -> Decision:
        """The final decision: asks go to the classifier (auto), then the
        host; without a host, an ask is a deny that says how to allow it.
        With ``[audit] enabled``, the decision is recorded (queued; never
        waited on).

        ``answer``: the person's answer, given before the call (a framework's
        approval step, a pending call resolved later); it settles an ask in
        place of the classifier and the host, and changes nothing else: an
        allow stays an allow, a deny a deny."""
        decision = await self._authorize(request, answer)
        if self.audit is not None:
            self.audit.record(request, decision)
        return decision

    async def _authorize(self, request: PermissionRequest, answer: Answer | None) -> Decision:
        decision = self.evaluate(request)
        if decision.decision != "ask":
            return decision
        if answer is not None:
            shown = replace(decision, suggestions=decision.suggestions or (request.tool.name,))
            return self._apply_answer(decision, shown, answer, request, "given with the call")
        hooks = self.toolbox.hooks
        if (decision.classifiable and request.policy.on_ask == "classifier"
                and hooks.implemented("pegboard_classify")):
            try:
                verdict = await hooks.afirst("pegboard_classify", request=request, decision=decision)
            except Exception as exc:
                return Decision("deny", f"{decision.reason}; the classifier failed: {short_error(exc)}",
                                "classifier")
            if isinstance(verdict, Vote) and verdict.decision in ("allow", "deny"):
                return Decision(verdict.decision, verdict.reason, "classifier")
            # None, an ask or anything else: the person decides.
        if not hooks.implemented("pegboard_ask"):
            return self._unasked(request, decision, "no one is there to ask (no pegboard_ask host)")
        shown = replace(decision, suggestions=decision.suggestions or (request.tool.name,))
        shown = replace(shown, previews=tuple(self._safe_preview(r, request.session) for r in shown.suggestions))
        try:
            with optional_span(f"approval {request.tool.name}", {"gen_ai.tool.name": request.tool.name}) as waiting:
                async with request.session.person_lock:
                    answer, host = await hooks.afirst_from("pegboard_ask", request=request, decision=shown)
                if waiting is not None:
                    waiting.set_attribute("pegboard.approval.answer", _answer_kind(answer))
        except Exception as exc:
            return Decision("deny", f"{decision.reason}; asking failed: {short_error(exc)}", "host")
        if not isinstance(answer, Answer):
            return self._unasked(request, decision, "the host gave no answer")
        if answer.pending:
            # The only ask authorize returns: the pipeline keeps the call pending.
            return replace(shown, previews=())
        return self._apply_answer(decision, shown, answer, request, host)

    def _apply_answer(self, decision: Decision, shown: Decision, answer: Answer,
                      request: PermissionRequest, host: str) -> Decision:
        # For the audit: what the person said, through which host, and who they are when known.
        by = f"{host}, by {answer.approver}" if answer.approver else host
        request.extra["answer"] = ("declined" if not answer.allow else answer.remember or "once", by[:200])
        if not answer.allow:
            return Decision("deny", answer.message or "the person declined this call",
                            "person" if answer.asked else "host")
        if answer.remember is None:
            return Decision("allow", "approved once", "person")
        rule_text = answer.rule or shown.suggestions[0]
        try:
            if answer.remember not in SCOPES:
                raise ValueError(f"unknown scope {answer.remember!r}; expected one of {', '.join(SCOPES)}")
            where = self.remember(rule_text, answer.remember, request.session)
        except Exception as exc:  # the person approved this call; only remembering failed
            return Decision("allow", f"approved once; could not remember {rule_text!r}: {short_error(exc)}",
                            "person")
        return Decision("allow", f"approved and remembered as {rule_text} ({where})", "person")

    def _unasked(self, request: PermissionRequest, decision: Decision, why: str) -> Decision:
        """An ask nobody answered is a deny; the host (and a plugin that runs
        the session for someone, such as a sub-agent's parent) hears of it
        as the event ``permission.unanswered``."""
        denied = self._headless(decision, why)
        request.session.emit("permission.unanswered", {"tool": request.tool.name, "reason": denied.reason,
                                                       "call_id": request.extra.get("call_id")})
        return denied

    def _headless(self, decision: Decision, why: str) -> Decision:
        suggestions = decision.suggestions
        hint = self._how_to_allow(suggestions) if not decision.firm else (
            " Protected paths are listed in [permissions] protected_paths; a person must approve each write.")
        return Decision("deny", f"{decision.reason}; this call needs approval and {why}.{hint}",
                        decision.source, suggestions)

    # --- grants ------------------------------------------------------------

    def remember(self, rule_text: str, scope: Literal["session", "project", "user"] | str,
                 session: PluginSession) -> str:
        """Keep an approval as an allow rule: for this session, or in a
        ``granted.toml`` in the person's config folder, the user's own or
        this project's (``projects/<name>-<digest>/granted.toml``, never in
        the checkout, so that no repository can ship approvals). Each is a
        config layer of its own, read again by every later ``Toolbox.load``.
        The rule is compiled before anything is written: one that does not
        parse is refused with ``ValueError``. Returns where it was kept."""
        if scope == "session":
            session.grant(rule_text, "allow", source="session grant")
            return "for this session"
        if scope not in ("project", "user"):
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        if scope == "project":
            path = project_grants_file(config_dir(), self.settings.root)
            header = f"For the project at {self.settings.root}"
        else:
            path, header = config_dir() / "granted.toml", ""
        rule = Rule.parse(rule_text, "allow", str(path), self.settings.root)
        compiled = self.compile(rule, f"{scope} grants")
        append_grant(path, rule.text, header)
        if compiled is not None:
            self._add(compiled)  # every session of this toolbox, from now on
        return str(path)

    # --- explaining --------------------------------------------------------

    def _safe_preview(self, rule_text: str, session: PluginSession) -> str:
        # A preview is advice for the person: its failure must not stop the ask.
        try:
            return self.preview(rule_text, session)
        except Exception as exc:
            return f"(no preview of {rule_text!r}: {short_error(exc)})"

    def preview(self, rule_text: str, session: PluginSession | None = None) -> str:
        """What a rule would allow besides the call at hand, in a sentence
        for the person deciding whether to "always allow" it (see ``_preview``)."""
        from .preview import preview

        return preview(self, rule_text, session)

    def listing(self) -> list[dict[str, Any]]:
        """Every rule: behavior, rule, layer, file (None for non-file layers), active."""
        known = set(self.toolbox.all_tool_names())
        rows: list[dict[str, Any]] = []
        for c in self.rules:
            row = {"behavior": c.rule.behavior, "rule": c.rule.text, "layer": c.layer,
                   "file": c.rule.source if c.layer != "defaults" else None, "active": True}
            if c.rule.specifier is None and c.rule.tool not in known and not any(
                    n.startswith(c.rule.tool + GROUP_SEPARATOR) for n in known):
                row["note"] = f"no loaded tool is called {c.rule.tool}"
            rows.append(row)
        rows += [{"behavior": r.behavior, "rule": r.text, "layer": layer, "file": r.source, "active": False,
                  "why": why} for r, layer, why in self.inactive]
        return rows


class _KnownNames:
    """Which tool names a rule may name: every tool the toolbox knows (a
    disabled plugin's too, when it was loaded with its inventory), the names
    tools declare in ``rule_names``, and the groups of declared namespaces
    that some tool belongs to (``mcp__server`` by its tools' names)."""

    def __init__(self, toolbox: Toolbox, namespaces: Mapping[str, tuple[ToolNamespace, str]]) -> None:
        self.names = set(toolbox.all_tool_names())
        for status in toolbox.statuses.values():
            metadata = status.tool.metadata
            declared = metadata.get("rule_names", ()) if isinstance(metadata, Mapping) else ()
            if isinstance(declared, (list, tuple)):
                self.names.update(n for n in declared if isinstance(n, str))
        self.groups: set[str] = set()
        for name in self.names:
            head, sep, _ = name.partition(GROUP_SEPARATOR)
            declared = namespaces.get(head) if sep else None
            group = declared[0].group_of(name) if declared is not None else None
            if group is not None:
                self.groups.add(declared[0].rule_name(group))  # type: ignore[index]
        self.folded = {n.casefold(): n for n in self.names}

    def knows(self, name: str) -> bool:
        return name in self.names or name in self.groups

    def judge(self, rule: Rule, unknown: list[tuple[Rule, str | None]]) -> None:
        """A name that differs from a known tool's only in case is a mistake
        nobody means (``deny = ["bash"]`` would deny nothing): ``ValueError``.
        Any other unknown name may be a tool of a plugin that is not
        installed here, or of an MCP server not yet listed: kept in
        ``unknown`` for ``pegboard doctor``, with the nearest known name."""
        same = self.folded.get(rule.tool.casefold())
        if same is not None:
            raise ValueError(f"no tool is called {rule.tool!r}; tool names are case-sensitive: did you mean "
                             f"{same!r}? (this {rule.behavior} rule would match nothing)")

        unknown.append((rule, nearest(rule.tool, self.names)))


def _abstain(request: PermissionRequest) -> None:
    return None


def _collect(out: list[tuple[str, Vote]], plugin: str, voter: Callable[[PermissionRequest], Any],
             request: PermissionRequest) -> None:
    try:
        vote = voter(request)
    except Exception as exc:
        vote = Vote.deny(f"plugin {plugin!r} failed while deciding: {short_error(exc)}")
    if vote is None:
        return
    if not isinstance(vote, Vote) or vote.decision not in ("allow", "ask", "deny"):
        if inspect.iscoroutine(vote):
            vote.close()  # votes are synchronous; never leave it un-awaited
        vote = Vote.deny(f"plugin {plugin!r} returned {type(vote).__name__}, not a Vote")
    out.append((plugin, vote))


def _saved(obj: Any) -> Any:
    """What a matcher or combined group's optional ``save()`` gives (None:
    it has none, or it failed: that only costs the next process speed)."""
    save = getattr(obj, "save", None)
    if not callable(save):
        return None
    try:
        return save()
    except Exception:
        return None


def _suggestions(votes: list[tuple[str, Vote]]) -> tuple[str, ...]:
    """The rules the votes offer for "always allow", each once, in order
    (made only for an ask: most decisions never show them)."""
    return tuple(dict.fromkeys(s for _, v in votes for s in v.suggestions if isinstance(s, str)))


def _policy_layer_mode(settings: Settings) -> str | None:
    for layer in settings.layers:
        if layer.name == "policy":
            perms = layer.data.get("permissions")
            mode = perms.get("mode") if isinstance(perms, Mapping) else None
            return mode if isinstance(mode, str) else None
    return None


def _rule_error(text: str, exc: BaseException) -> str:
    """``rule 'X(y)': why``, quoting the rule once: a matcher that names the
    rule itself (``raise ValueError(f"{rule.text}: ...")``) is not repeated."""
    message = str(exc)
    for quoted in (text, text.strip(), repr(text), repr(text.strip())):
        if message.startswith(f"{quoted}: "):
            message = message[len(quoted) + 2:]
            break
    return f"rule {text!r}: {message}"


def _answer_kind(answer: object) -> str:
    """A host's answer in one word, for the approval span."""
    if not isinstance(answer, Answer):
        return "none"
    if answer.pending:
        return "later"
    if not answer.allow:
        return "deny"
    return f"allow:{answer.remember}" if answer.remember else "allow"

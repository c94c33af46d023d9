"""The permission engine: one decision for every call.

Order of precedence (first that applies wins):

1. the policy does not offer the tool: deny;
2. a deny rule matches (any layer, the system policy, a session grant): deny;
3. a plugin votes deny (a plugin that raises counts as deny): deny;
4. a plugin casts a firm ask (protected paths): ask, or deny in bypass;
5. an ask rule matches: ask;
6. an allow rule or a session grant matches: allow;
7. the policy runs everything (bypassPermissions, unrestricted): allow;
8. the plugins' votes, ask beating allow; without votes, read-only tools run
   where the policy lets reads run and other tools ask.

An ask then goes where the policy sends it: the host's ``pegboard_ask``,
the ``pegboard_classify`` classifier (auto), or a deny (dontAsk, levels).
Nothing after step 3 can turn a deny into an allow.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec

from ._config import ConfigError, Settings, config_dir
from ._decisions import RANK, Answer, Decision, PermissionRequest, Rule, RuleMatcher, Vote
from ._paths import is_within
from ._plugins import PluginContext, _short_error

if TYPE_CHECKING:
    from ._session import Session
    from ._toolbox import Toolbox

__all__ = ["CompiledRule", "PermissionEngine"]


class _NameMatcher:
    def __init__(self, name: str):
        self.name = name

    def matches(self, request: PermissionRequest) -> bool:
        return request.tool.name == self.name


@dataclass(frozen=True)
class CompiledRule:
    rule: Rule
    matcher: RuleMatcher

    @property
    def where(self) -> str:
        return f"rule {self.rule.text} in {self.rule.source}"


class PermissionEngine:
    def __init__(self, toolbox: Toolbox):
        self.toolbox = toolbox
        self.settings: Settings = toolbox.settings
        self.rules: list[CompiledRule] = []
        self.inactive: list[tuple[Rule, str]] = []
        self._index: dict[str, dict[str, list[CompiledRule]]] = {"allow": {}, "ask": {}, "deny": {}}
        problems: list[str] = []
        for behavior, text, layer in self.settings.rules():
            try:
                rule = Rule.parse(str(text), behavior, layer.label, self.settings.root)  # type: ignore[arg-type]
                compiled = self.compile(rule)
            except ValueError as exc:
                problems.append(f"{layer.label}: [permissions] {behavior}: rule {text!r}: {exc}")
                continue
            if compiled is not None:
                self._add(compiled)
        if problems:
            raise ConfigError(problems)
        self._protected = pathspec.GitIgnoreSpec.from_lines(self.settings.core.permissions.protected_paths)

    # --- rules -------------------------------------------------------------

    def compile(self, rule: Rule) -> CompiledRule | None:
        """Ask the tool's plugin to compile the specifier. ``ValueError`` when
        it does not parse; None (kept as inactive) when no plugin knows it."""
        if rule.specifier is None and rule.tool in self.toolbox.all_tool_names():
            return CompiledRule(rule, _NameMatcher(rule.tool))
        for impl in self.toolbox.plugins.pm.hook.pegboard_rule_matcher.get_hookimpls():
            context = self.toolbox.context_for(impl.plugin_name)
            if context is None:
                continue
            kwargs = {"rule": rule, "context": context}
            try:
                matcher = impl.function(*[kwargs[a] for a in impl.argnames])
            except ValueError:
                raise
            except Exception as exc:
                raise ValueError(f"plugin {impl.plugin_name!r} failed on it: {_short_error(exc)}") from None
            if matcher is not None:
                return CompiledRule(rule, matcher)
        if rule.specifier is None:
            return CompiledRule(rule, _NameMatcher(rule.tool))
        owner = self.toolbox.owner_of(rule.tool)
        if owner is not None:
            raise ValueError(f"plugin {owner!r} defines no specifiers for {rule.tool}")
        self.inactive.append((rule, f"no loaded plugin provides {rule.tool}"))
        return None

    def _add(self, compiled: CompiledRule) -> None:
        self.rules.append(compiled)
        self._index[compiled.rule.behavior].setdefault(compiled.rule.tool, []).append(compiled)

    def _candidates(self, rules: dict[str, list[CompiledRule]], name: str) -> Iterable[CompiledRule]:
        yield from rules.get(name, ())
        # mcp__server__tool is also covered by rules for mcp__server.
        parts = name.split("__")
        for n in range(len(parts) - 1, 1, -1):
            yield from rules.get("__".join(parts[:n]), ())

    def _match(self, behavior: str, request: PermissionRequest) -> CompiledRule | None:
        sources = [self._index[behavior], request.session.grant_index(behavior)]
        for rules in sources:
            for compiled in self._candidates(rules, request.tool.name):
                try:
                    if compiled.matcher.matches(request):
                        return compiled
                except Exception as exc:
                    if behavior == "deny":  # a deny rule that cannot be checked still denies
                        return compiled
                    request.extra.setdefault("rule_errors", []).append(f"{compiled.where}: {exc}")
        return None

    # --- paths -------------------------------------------------------------

    def is_protected(self, path: Path, session: Session) -> bool:
        if is_within(path, config_dir()):
            return True
        bases = [*session.working_dirs, Path.home()]
        for base in bases:
            if is_within(path, base):
                rel = path.relative_to(base).as_posix()
                if rel != "." and self._protected.match_file(rel):
                    return True
        return False

    # --- deciding ----------------------------------------------------------

    def votes(self, request: PermissionRequest) -> list[tuple[str, Vote]]:
        out: list[tuple[str, Vote]] = []
        for impl in self.toolbox.plugins.pm.hook.pegboard_permission.get_hookimpls():
            try:
                vote = impl.function(*[{"request": request}[a] for a in impl.argnames])
            except Exception as exc:
                vote = Vote.deny(f"plugin {impl.plugin_name!r} failed while deciding: {_short_error(exc)}")
            if vote is None:
                continue
            if not isinstance(vote, Vote):
                vote = Vote.deny(f"plugin {impl.plugin_name!r} returned {type(vote).__name__}, not a Vote")
            out.append((impl.plugin_name, vote))
        return out

    def evaluate(self, request: PermissionRequest) -> Decision:
        """The decision before anyone is asked (no host, no classifier)."""
        policy = request.policy
        tool = request.tool
        required = self.toolbox.required_level(tool)
        if not policy.offers_tool(required, tool.read_only):
            return Decision("deny", f"{tool.name} is not offered in {policy.name} (needs {required})",
                            f"mode {policy.name}")
        if (hit := self._match("deny", request)) is not None:
            return Decision("deny", f"denied by {hit.rule.text}", hit.where)
        votes = self.votes(request)
        for plugin, vote in votes:
            if vote.decision == "deny":
                return Decision("deny", vote.reason, f"plugin {plugin}")
        suggestions = tuple(dict.fromkeys(s for _, v in votes for s in v.suggestions))
        for plugin, vote in votes:
            if vote.decision == "ask" and vote.firm:
                if policy.bypass:
                    return Decision("deny", f"{vote.reason}; bypassPermissions does not reach it",
                                    f"plugin {plugin}")
                return Decision("ask", vote.reason, f"plugin {plugin}", suggestions, firm=True)
        if (hit := self._match("ask", request)) is not None:
            return Decision("ask", f"{hit.rule.text} asks", hit.where, suggestions)
        if (hit := self._match("allow", request)) is not None:
            return Decision("allow", f"allowed by {hit.rule.text}", hit.where)
        if policy.bypass:
            return Decision("allow", f"{policy.name} runs everything", f"mode {policy.name}")
        if policy.ask_every_call:
            return Decision("ask", "every call asks at level ask", "mode ask", suggestions or (tool.name,))
        if votes:
            plugin, worst = max(votes, key=lambda pv: RANK[pv[1].decision])
            return Decision(worst.decision, worst.reason, f"plugin {plugin}",
                            suggestions if worst.decision == "ask" else ())
        if tool.read_only and policy.allows_reads(True):
            return Decision("allow", "read-only tool", f"mode {policy.name}")
        if not tool.read_only and policy.allows_edits(True) and policy.is_level:
            return Decision("allow", f"offered at level {policy.name}", f"mode {policy.name}")
        return Decision("ask", f"{tool.name} changes things", f"mode {policy.name}", (tool.name,))

    async def authorize(self, request: PermissionRequest) -> Decision:
        """The final decision: asks go to the classifier, the host, or a deny."""
        decision = self.evaluate(request)
        if decision.decision != "ask":
            return decision
        policy = request.policy
        hook = self.toolbox.plugins.pm.hook
        if policy.beyond == "deny":
            return self._headless(decision, f"{policy.name} does not ask")
        if policy.beyond == "classifier" and not decision.firm and hook.pegboard_classify.get_hookimpls():
            try:
                verdict = await _maybe_await(hook.pegboard_classify(request=request, decision=decision))
            except Exception as exc:
                verdict = Vote.deny(f"classifier failed: {_short_error(exc)}")
            if isinstance(verdict, Vote) and verdict.decision != "ask":
                return Decision(verdict.decision, verdict.reason, "classifier")
        if not hook.pegboard_ask.get_hookimpls():
            return self._headless(decision, "no one is there to ask")
        try:
            answer = await _maybe_await(hook.pegboard_ask(request=request, decision=decision))
        except Exception as exc:
            return Decision("deny", f"asking failed: {_short_error(exc)}", "host")
        if not isinstance(answer, Answer):
            return self._headless(decision, "the host gave no answer")
        if not answer.allow:
            return Decision("deny", answer.message or "the person declined this call", "person")
        if answer.remember:
            rule_text = answer.rule or (decision.suggestions[0] if decision.suggestions else request.tool.name)
            self.remember(rule_text, answer.remember, request.session)
            return Decision("allow", f"approved and remembered as {rule_text} ({answer.remember})", "person")
        return Decision("allow", "approved once", "person")

    def _headless(self, decision: Decision, why: str) -> Decision:
        rule = decision.suggestions[0] if decision.suggestions else None
        hint = (f" To allow it, add {rule!r} to [permissions] allow in "
                f"{self.settings.root / '.pegboard' / 'config.toml'}, or run in a mode that allows it."
                if rule else "")
        return Decision("deny", f"{decision.reason}; this call needs approval and {why}.{hint}",
                        decision.source, decision.suggestions)

    def remember(self, rule_text: str, scope: str, session: Session) -> None:
        """Keep an approval: for the session, or in the project's or user's
        ``granted.toml`` (a config layer of its own, next to config.toml)."""
        session.grant(rule_text, "allow", source=f"session grant ({scope})")
        if scope == "session":
            return
        folder = self.settings.root / ".pegboard" if scope == "project" else config_dir()
        _append_grant(folder / "granted.toml", rule_text)

    def preview(self, rule_text: str) -> str:
        """What else a rule would allow, in one sentence, for the person."""
        rule = Rule.parse(rule_text, "allow", "preview")
        if rule.specifier is None:
            return f"every call of {rule.tool}"
        return f"calls of {rule.tool} matching {rule.specifier!r}"

    def listing(self) -> list[dict[str, Any]]:
        rows = [{"behavior": c.rule.behavior, "rule": c.rule.text, "source": c.rule.source, "active": True}
                for c in self.rules]
        rows += [{"behavior": r.behavior, "rule": r.text, "source": r.source, "active": False, "why": why}
                 for r, why in self.inactive]
        return rows


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _append_grant(path: Path, rule_text: str) -> None:
    import tomllib

    existing: list[str] = []
    if path.is_file():
        existing = list(tomllib.loads(path.read_text(encoding="utf-8")).get("permissions", {}).get("allow", []))
    if rule_text in existing:
        return
    rules = [*existing, rule_text]
    body = "# Rules remembered from approvals. Edit freely.\n[permissions]\nallow = [\n"
    body += "".join(f"    {_toml_string(r)},\n" for r in rules) + "]\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, path)


def _toml_string(text: str) -> str:
    import json

    return json.dumps(text)  # a JSON string is a valid TOML basic string

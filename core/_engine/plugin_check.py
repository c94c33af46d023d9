"""Checking a plugin before it ships (``pegboard plugins check NAME``,
``pegboard.check_plugin``): everything a user would otherwise meet only when
they hit it. Every lazy ``"module:attr"`` handler and input model imported,
every input schema validated, every tool's description present, hook
implementations that match no hook and tool names another plugin holds
reported, and the plugin's sample rules (``pegboard_rule_samples``)
compiled through its matcher and tried on its sample calls, with a
matcher's ``combine()`` held to what its ``matches()`` finds, and a
matcher or group that ``save()``s (the rule cache protocol) built again
from what it saved and held to the same answers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._api.decisions import PermissionRequest, Rule, RuleSamples
from .._loading.hookcheck import HOOK_PREFIX
from .._util.errors import short_error
from .toolbox import Toolbox
from .arguments import Refusal, as_mapping, validate
from .._util.nearest import did_you_mean
from .._loading.plugins import BUILTIN_DISTRIBUTION, ENTRY_POINT_GROUP

if TYPE_CHECKING:
    from .._api.decisions import CompiledRule
    from .._loading.plugins import PluginRecord
    from .session import Session
    from .._api.tools import Tool

__all__ = ["PluginCheck", "check_plugin"]

BEHAVIORS = ("allow", "ask", "deny")


@dataclass
class PluginCheck:
    """What ``check_plugin`` found: ``problems`` (one line each; the plugin
    passes when there are none), ``notes`` (what was not checked, and why)
    and ``checked`` (what was)."""

    plugin: str
    """The plugin checked, by the name it is installed (or was loaded) under."""
    problems: list[str] = field(default_factory=list)
    """What is wrong, one line each; ``pegboard plugins check`` prints them and exits 1."""
    notes: list[str] = field(default_factory=list)
    """What was not checked, and why (no rule samples, say): not problems."""
    checked: list[str] = field(default_factory=list)
    """What was checked, in a few words each."""

    @property
    def ok(self) -> bool:
        """No problems: the plugin passes."""
        return not self.problems

    def __str__(self) -> str:
        lines = [f"{self.plugin}: {p}" for p in self.problems]
        lines += [f"{self.plugin}: note: {n}" for n in self.notes]
        if self.ok:
            lines.append(f"{self.plugin}: ok ({'; '.join(self.checked) or 'nothing to check'})")
        return "\n".join(lines)


def check_plugin(name: str, plugin: object | None = None, *, cwd: str | os.PathLike[str] | None = None,
                 config: str | os.PathLike[str] | None = None, installed: Sequence[str] | None = None,
                 samples: RuleSamples | None = None) -> PluginCheck:
    """Check the plugin ``name``: the installed one, or ``plugin`` (a module,
    an object with hook implementations, or an import string) loaded as
    ``name`` without installing it. It is loaded beside the installed
    plugins (``installed``: only these; the built-ins are always among
    them, since their tool names are reserved) with the config that applies
    in ``cwd``. ``samples`` are tried besides those the plugin gives.
    """
    result = PluginCheck(name)
    given = {name: plugin} if plugin is not None else None
    only = None if installed is None else sorted({*installed, *_builtin_names(), name})
    toolbox = Toolbox.load(cwd=cwd, config=config, plugins=only, extra_plugins=given, listing=True)
    record = toolbox.records.get(name)
    if record is None:
        found = ", ".join(sorted(toolbox.records)) or "none"
        hint = did_you_mean(name, toolbox.records)
        result.problems.append(f"no plugin called {name!r} is installed{'; ' + hint if hint else ''} "
                               f"(found: {found})")
        return result
    if not record.enabled:
        where = toolbox.settings.source_of("plugins", name, "enabled")
        result.problems.append(f"switched off ([plugins.{name}] enabled = false in {where}): nothing of it "
                               "was checked")
        return result
    if record.error is not None:
        result.problems.append(record.error)
        return result
    result.problems.extend(record.warnings)
    tools = [toolbox.statuses[t].tool for t in record.tools if t in toolbox.statuses]
    for tool in tools:
        result.problems.extend(_tool_problems(toolbox, tool))
    result.checked.append(f"{len(tools)} tool{'s' if len(tools) != 1 else ''}")
    _check_rules(toolbox, record, tools, samples, result)
    return result


def _builtin_names() -> list[str]:
    from importlib.metadata import entry_points

    return [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)
            if ep.dist is not None and ep.dist.metadata["Name"] == BUILTIN_DISTRIBUTION]


def _tool_problems(toolbox: Toolbox, tool: Tool) -> list[str]:
    """The tool's problems: a break (the rule the runtime follows, once,
    and nothing derived from it), else its schema's and a missing description."""
    where = f"tool {tool.name}"
    broken = toolbox.tool_problem(tool, import_handler=True)
    problems = [] if broken is None else [f"{where}: {broken}"]
    if broken is not None and not broken.startswith("handler "):
        return problems  # no schema, or no description: nothing else of it can be judged
    problems += [f"{where}: {p}" for p in _schema_problems(tool.schema)]
    if not toolbox.description(tool).strip():
        problems.append(f"{where} has no description: ship descriptions/{tool.name}.md in the plugin's "
                        "package (or give Tool(description=...))")
    return problems


def _schema_problems(schema: Mapping[str, Any]) -> list[str]:
    import jsonschema  # type: ignore[import-untyped,unused-ignore]

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path)
        return [f"input schema is not valid JSON Schema{f' at {at}' if at else ''}: {exc.message}"]
    if schema.get("type") != "object":
        return [f"input schema must describe an object (\"type\": \"object\"), not {schema.get('type')!r}: "
                "a tool's arguments are always one"]
    return []


def _samples(toolbox: Toolbox, record: PluginRecord, extra: RuleSamples | None,
             result: PluginCheck) -> RuleSamples:
    rules: list[str] = []
    calls: list[tuple[str, Mapping[str, Any]]] = []
    try:
        given = toolbox.hooks.one(record.obj, "pegboard_rule_samples", context=toolbox.context_for(record.name))
    except Exception as exc:
        result.problems.append(f"pegboard_rule_samples failed: {short_error(exc)}")
        given = None
    for found in (given, extra):
        if found is None:
            continue
        if not isinstance(found, RuleSamples):
            result.problems.append(f"pegboard_rule_samples returned {type(found).__name__}, not a RuleSamples")
            continue
        rules.extend(found.rules)
        calls.extend(found.calls)
    return RuleSamples(rules, calls)


def _check_rules(toolbox: Toolbox, record: PluginRecord, tools: list[Tool], extra: RuleSamples | None,
                 result: PluginCheck) -> None:
    samples = _samples(toolbox, record, extra, result)
    has_matcher = any(i.plugin is record.obj for i in toolbox.hooks.implementations("pegboard_rule_matcher"))
    if not samples.rules:
        if has_matcher:
            result.notes.append("it compiles rules (pegboard_rule_matcher) but gives no samples "
                                "(pegboard_rule_samples): its matcher was not tried")
        return
    own = {t.name: t for t in tools}
    broken = {name for name in own if name in toolbox.broken}  # reported once, with the tool
    session = toolbox.session("default")
    requests: dict[str, list[tuple[int, PermissionRequest]]] = {}
    misspelt_hook = any(w.startswith(HOOK_PREFIX) or " matches no hook" in w for w in record.warnings)
    uncompiled: list[str] = []
    for number, (tool_name, arguments) in enumerate(samples.calls, 1):
        if tool_name in broken:
            continue
        request = _request(session, own, number, tool_name, arguments, result)
        if request is not None:
            requests.setdefault(tool_name, []).append((number, request))
    compiled: dict[tuple[str, str], list[CompiledRule]] = {}
    for text in samples.rules:
        for behavior in BEHAVIORS:
            try:
                rule = Rule.parse(text, behavior, "sample rule")  # type: ignore[arg-type]
            except ValueError as exc:
                result.problems.append(f"sample rule {text}: does not parse: {exc}")
                break
            if rule.tool not in own:
                result.problems.append(f"sample rule {text}: {rule.tool} is not a tool of this plugin")
                break
            if rule.tool in broken:
                break
            try:
                found = toolbox.permissions.compile(rule, layer="sample")
            except ValueError as exc:
                if not has_matcher:  # derived from the missing matcher: said once, below
                    uncompiled.append(text)
                    break
                result.problems.append(f"sample rule {text} (as {behavior}): refused: {exc}")
                continue
            if found is None:
                uncompiled.append(text)
                break
            compiled.setdefault((behavior, rule.tool), []).append(found)
            _try_matcher(found, requests.get(rule.tool, ()), result)
            _check_saved(toolbox, found, requests.get(rule.tool, ()), result)
    if uncompiled and not (misspelt_hook or not has_matcher):
        result.problems.extend(f"sample rule {text}: nothing compiled it" for text in uncompiled)
    elif uncompiled and not misspelt_hook:  # one cause, said once
        result.problems.append(f"sample rules {', '.join(uncompiled)}: nothing compiled them (the plugin "
                               "implements no pegboard_rule_matcher)")
    for tool_name in own:
        if tool_name in broken:
            continue
        if any(key[1] == tool_name for key in compiled) and not requests.get(tool_name):
            result.notes.append(f"no sample call of {tool_name}: its rules were compiled but not tried")
    combined = 0
    for (behavior, tool_name), rules in compiled.items():
        combined += _check_combine(behavior, rules, requests.get(tool_name, ()), result)
    result.checked.append(f"{len(samples.rules)} sample rules on {len(samples.calls)} sample calls"
                          + (f", {combined} combined groups" if combined else ""))


def _request(session: Session, own: Mapping[str, Tool], number: int, tool_name: str,
             arguments: Mapping[str, Any], result: PluginCheck) -> PermissionRequest | None:
    tool = own.get(tool_name)
    if tool is None:
        result.problems.append(f"sample call {number}: {tool_name} is not a tool of this plugin")
        return None
    try:
        validated, _ = validate(tool, dict(arguments))
    except Refusal as refusal:
        result.problems.append(f"sample call {number} ({tool_name}): its input is refused: "
                               f"{refusal.result.text_content()}")
        return None
    except Exception as exc:  # a broken input model, reported with the tool
        result.problems.append(f"sample call {number} ({tool_name}): cannot validate: {short_error(exc)}")
        return None
    return PermissionRequest(tool=tool, input=as_mapping(validated), session=session, policy=session.policy)


def _try_matcher(compiled: CompiledRule, requests: Sequence[tuple[int, PermissionRequest]],
                 result: PluginCheck) -> None:
    rule = compiled.rule
    describe = getattr(compiled.matcher, "describe", None)
    if callable(describe):
        try:
            text = describe()
            if not isinstance(text, str):
                raise TypeError(f"returned {type(text).__name__}, not str")
        except Exception as exc:
            result.problems.append(f"sample rule {rule.text} (as {rule.behavior}): describe() failed: "
                                   f"{short_error(exc)}")
    for number, request in requests:
        try:
            answer = compiled.matcher.matches(request)
        except Exception as exc:
            result.problems.append(f"sample rule {rule.text} (as {rule.behavior}): matches() raised on sample "
                                   f"call {number}: {short_error(exc)}")
            continue
        if not isinstance(answer, bool):
            result.problems.append(f"sample rule {rule.text} (as {rule.behavior}): matches() returned "
                                   f"{type(answer).__name__} on sample call {number}, not a bool")


def _plain(what: str, save: Any, result: PluginCheck) -> tuple[bool, Any]:
    """(whether ``save()`` gave plain data, what it gave); a problem said when not."""
    import marshal

    try:
        data = save()
        marshal.dumps(data)
    except Exception as exc:
        result.problems.append(f"{what}: save() {'gave what is not plain data' if isinstance(exc, ValueError) else 'failed'}"
                               f" ({short_error(exc)}): nothing of it can be kept")
        return False, None
    return True, data


def _fresh(request: PermissionRequest) -> PermissionRequest:
    """The same call as a new request: what a matcher notes in one (the
    shell's covered parts) must not change another's answer."""
    return PermissionRequest(tool=request.tool, input=request.input, session=request.session, policy=request.policy)


def _answers(matcher: Any, requests: Sequence[tuple[int, PermissionRequest]]) -> list[Any]:
    out: list[Any] = []
    for _, request in requests:
        try:
            out.append(matcher.matches(_fresh(request)))
        except Exception as exc:
            out.append(type(exc))
    return out


def _check_saved(toolbox: Toolbox, compiled: CompiledRule, requests: Sequence[tuple[int, PermissionRequest]],
                 result: PluginCheck) -> None:
    """The rule cache protocol: a matcher with ``save()`` must be built again
    from what it saves (its hook given ``saved``) and answer every sample
    call as it does."""
    rule = compiled.rule
    save = getattr(compiled.matcher, "save", None)
    if not callable(save):
        return
    what = f"sample rule {rule.text} (as {rule.behavior})"
    ok, data = _plain(what, save, result)
    if not ok or data is None:
        return
    try:
        again = toolbox.permissions.compile(rule, layer="sample", saved=data)
    except ValueError as exc:
        result.problems.append(f"{what}: refused what its save() gave ({exc}): the next process compiles it again")
        return
    if again is None or type(again.matcher) is not type(compiled.matcher):
        result.problems.append(f"{what}: given what its save() gave, pegboard_rule_matcher made "
                               f"{type(again.matcher).__name__ if again is not None else 'nothing'}, "
                               f"not a {type(compiled.matcher).__name__}")
        return
    for (number, _), before, after in zip(requests, _answers(compiled.matcher, requests),
                                          _answers(again.matcher, requests)):
        if before != after:
            result.problems.append(f"{what}: built from what its save() gave, it answers sample call {number} "
                                   f"{after!r}, where it answered {before!r}")


def _check_combine_saved(kind: type, combined: Any, order: list[CompiledRule],
                         requests: Sequence[tuple[int, PermissionRequest]], result: PluginCheck) -> None:
    """The rule cache protocol for a group: ``combine(matchers, saved=...)``
    with what the combined object saved must find what it finds."""
    save = getattr(combined, "save", None)
    if not callable(save):
        return
    what = f"{kind.__name__}.combine()"
    ok, data = _plain(f"{what}'s group", save, result)
    if not ok or data is None:
        return
    try:
        again = kind.combine([c.matcher for c in order], saved=data)  # type: ignore[attr-defined]
    except Exception as exc:
        result.problems.append(f"{what} refused, with saved=, what its group's save() gave ({short_error(exc)})")
        return
    for number, request in requests:
        try:
            before = combined.first_match(_fresh(request))
        except Exception:
            continue  # reported with the group
        try:
            after = again.first_match(_fresh(request))
        except Exception as exc:
            after = type(exc)
        if before != after:
            result.problems.append(f"{what}: the group built from what it saved answers sample call {number} "
                                   f"{after!r}, where it answered {before!r}")


def _check_combine(behavior: str, rules: list[CompiledRule], requests: Sequence[tuple[int, PermissionRequest]],
                   result: PluginCheck) -> int:
    """As the engine groups them: rules of one behavior and tool whose
    matchers share a class with ``combine``; each group, in both orders,
    must find on every sample call a rule that ``matches()`` finds."""
    by_type: dict[type, list[CompiledRule]] = {}
    for compiled in rules:
        if callable(getattr(type(compiled.matcher), "combine", None)):
            by_type.setdefault(type(compiled.matcher), []).append(compiled)
    groups = 0
    for kind, group in by_type.items():
        if len(group) < 2:
            continue
        for order in (group, group[::-1]):
            try:
                combined = kind.combine([c.matcher for c in order])  # type: ignore[attr-defined]
            except Exception as exc:
                result.notes.append(f"{kind.__name__}.combine() refused {len(order)} {behavior} rules "
                                    f"({short_error(exc)}): the engine asks them one by one")
                break
            groups += 1
            if order is group:
                _check_combine_saved(kind, combined, order, requests, result)
            for number, request in requests:
                try:
                    expected = [i for i, c in enumerate(order) if c.matcher.matches(request)]
                except Exception:
                    continue  # reported by _try_matcher
                try:
                    got = combined.first_match(request)
                except Exception as exc:
                    result.problems.append(f"{kind.__name__}.combine(): first_match raised on sample call "
                                           f"{number}: {short_error(exc)}")
                    continue
                if (got is None and not expected) or (got is not None and got in expected):
                    continue
                said = "no rule" if got is None else f"rule {order[got].rule.text}" \
                    if isinstance(got, int) and 0 <= got < len(order) else repr(got)
                truth = ", ".join(order[i].rule.text for i in expected) or "none"
                result.problems.append(
                    f"{kind.__name__}.combine() disagrees with matches() on sample call {number} "
                    f"({dict(request.input)}) for {len(order)} {behavior} rules: first_match gave {said}, "
                    f"matches() finds {truth}")
    return groups

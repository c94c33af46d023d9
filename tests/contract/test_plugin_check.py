"""``pegboard plugins check`` and ``pegboard.check_plugin`` catch what a user
would otherwise meet only when they hit it, one line per problem; every
built-in plugin passes."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pegboard import RuleSamples, check_plugin
from pegboard.testing import CLIRunner, Project

# A plugin that passes: one tool, its description, a matcher that combines
# (correctly), samples. Each test breaks one thing in it.
GOOD = '''
from pydantic import BaseModel
from pegboard import RuleSamples, Tool, Vote, hookimpl

class GreetInput(BaseModel):
    name: str

async def greet(args, ctx):
    return f"Hello, {args.name}!"

class Prefix:
    def __init__(self, prefix):
        self.prefix = prefix

    def matches(self, request):
        return request.input["name"].startswith(self.prefix)

    def describe(self):
        return f"names starting with {self.prefix!r}"

    @classmethod
    def combine(cls, matchers):
        return Combined(matchers)

class Combined:
    def __init__(self, matchers):
        self.prefixes = [m.prefix for m in matchers]

    def first_match(self, request):
        name = request.input["name"]
        for index, prefix in enumerate(self.prefixes):
            if name.startswith(prefix):
                return index
        return None

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Greet", handler=f"{__name__}:greet", input_model=f"{__name__}:GreetInput",
                  read_only=True, permission="read", description=DESCRIPTION))

DESCRIPTION = "Greets someone by name."

@hookimpl
def pegboard_permission(request, context):
    return Vote.allow("harmless") if request.tool.plugin == context.name else None

@hookimpl
def pegboard_rule_matcher(rule, context):
    if rule.tool != "Greet" or rule.specifier is None:
        return None
    return Prefix(rule.specifier)

@hookimpl
def pegboard_rule_samples():
    return RuleSamples(rules=["Greet(A)", "Greet(Ad)", "Greet(B)"],
                       calls=[("Greet", {"name": "Ada"}), ("Greet", {"name": "Bob"}), ("Greet", {"name": "Cy"})])
'''


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """``plugin_module(source)``: a module on sys.path (a fresh name each
    time), returned as an import string for ``check_plugin``."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    names: list[str] = []

    def write(source: str) -> str:
        name = f"checked_{uuid.uuid4().hex[:8]}"
        (site / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)


def check(module: str, project: Project, **options: object) -> list[str]:
    return check_plugin("greet", module, cwd=project.root, installed=[], **options).problems  # type: ignore[arg-type]


def test_a_good_plugin_passes(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    report = check_plugin("greet", plugin_module(GOOD), cwd=pegboard_project.root)
    assert report.problems == [] and report.notes == []
    assert report.checked == ["1 tool", "3 sample rules on 3 sample calls, 6 combined groups"]
    assert str(report).startswith("greet: ok (1 tool; 3 sample rules")


def test_a_misspelt_lazy_handler(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    problems = check(plugin_module(GOOD.replace('handler=f"{__name__}:greet"', 'handler=f"{__name__}:gret"')),
                     pegboard_project)
    assert len(problems) == 1
    assert problems[0].startswith("tool Greet: handler 'checked_") and ":gret' does not resolve: " \
        "AttributeError" in problems[0]


def test_a_misspelt_lazy_input_model(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    problems = check(plugin_module(GOOD.replace(':GreetInput"', ':GreetInptu"')), pegboard_project)
    assert any(p.startswith("tool Greet: input model 'checked_") and "does not resolve" in p for p in problems)


def test_a_missing_description(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    problems = check(plugin_module(GOOD.replace('DESCRIPTION = "Greets someone by name."', 'DESCRIPTION = " "')),
                     pegboard_project)
    assert problems == ["tool Greet has no description: ship descriptions/Greet.md in the plugin's package "
                        "(or give Tool(description=...))"]


def test_a_bad_schema(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    source = GOOD.replace('input_model=f"{__name__}:GreetInput"',
                          'input_schema={"type": "object", "properties": {"name": {"type": "strnig"}}}')
    problems = check(plugin_module(source), pegboard_project)
    assert problems[0].startswith("tool Greet: input schema is not valid JSON Schema at properties/name/type: "
                                  "'strnig' is not valid")
    not_an_object = GOOD.replace('input_model=f"{__name__}:GreetInput"', 'input_schema={"type": "string"}')
    assert check(plugin_module(not_an_object), pegboard_project)[0].startswith(
        "tool Greet: input schema must describe an object")


def test_a_clash_with_a_built_in_name(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    source = GOOD.replace('Tool(name="Greet"', 'Tool(name="Read"')
    problems = check(plugin_module(source), pegboard_project)
    assert problems[0] == "tool 'Read' not registered: the built-in plugin 'fs' has a tool of that name"


def test_a_misspelt_hook(plugin_module: Callable[[str], str], pegboard_project: Project) -> None:
    source = GOOD + '''
@hookimpl
def pegboard_doctr(config):
    return []

@hookimpl
def pegbaord_event(kind):
    pass

def pegboard_session_closed(session):
    pass
'''
    problems = check(plugin_module(source), pegboard_project)
    assert len(problems) == 3, problems
    assert any(p.startswith("pegboard_doctr (") and "matches no hook specification, so it is never called" in p
               for p in problems)
    assert any(p.startswith("pegbaord_event (") and ".py:" in p and p.endswith(
        "matches no hook specification (hooks are named pegboard_...), so it is never called") for p in problems)
    assert any(p.startswith("pegboard_session_closed (") and "is not marked @hookimpl" in p for p in problems)


def test_a_combine_that_disagrees_with_matches(plugin_module: Callable[[str], str],
                                               pegboard_project: Project) -> None:
    # first_match forgets the last prefix: "Bob" matches Greet(B) one by one, not combined
    source = GOOD.replace("for index, prefix in enumerate(self.prefixes):",
                          "for index, prefix in enumerate(self.prefixes[:-1]):")
    problems = check(plugin_module(source), pegboard_project)
    assert problems, "the broken combine was not caught"
    assert all("Prefix.combine() disagrees with matches() on sample call" in p for p in problems)
    assert any("({'name': 'Bob'}) for 3 allow rules: first_match gave no rule, matches() finds Greet(B)" in p
               for p in problems)


def test_a_matcher_that_raises_and_samples_that_do_not_fit(plugin_module: Callable[[str], str],
                                                           pegboard_project: Project) -> None:
    source = GOOD.replace('return request.input["name"].startswith(self.prefix)',
                          'return request.input["nmae"].startswith(self.prefix)')
    problems = check(plugin_module(source), pegboard_project,
                     samples=RuleSamples(rules=["Grete(A)", "Greet("], calls=[("Greet", {"who": 1})]))
    assert "sample rule Grete(A): Grete is not a tool of this plugin" in problems
    assert any(p.startswith("sample rule Greet(: does not parse") for p in problems)
    assert any(p.startswith("sample call 4 (Greet): its input is refused") for p in problems)
    assert any(p.startswith("sample rule Greet(A) (as allow): matches() raised on sample call 1: KeyError")
               for p in problems)


def test_no_samples_is_a_note_not_a_problem(plugin_module: Callable[[str], str],
                                            pegboard_project: Project) -> None:
    source = GOOD.replace("@hookimpl\ndef pegboard_rule_samples():", "def _no_samples():")
    report = check_plugin("greet", plugin_module(source), cwd=pegboard_project.root, installed=[])
    assert report.ok and report.notes == [
        "it compiles rules (pegboard_rule_matcher) but gives no samples (pegboard_rule_samples): its matcher "
        "was not tried"]


def test_a_plugin_that_fails_to_load_or_is_off(plugin_module: Callable[[str], str],
                                               pegboard_project: Project) -> None:
    problems = check(plugin_module("raise RuntimeError('half written')\n"), pegboard_project)
    assert len(problems) == 1 and "RuntimeError: half written" in problems[0]
    pegboard_project.config("[plugins.fs]\nenabled = false\n")
    off = check_plugin("fs", cwd=pegboard_project.root).problems
    assert len(off) == 1 and off[0].startswith("switched off ([plugins.fs] enabled = false in ")


@pytest.mark.parametrize("name", ["fs", "shell", "subtasks", "web", "skills", "schedule", "mcp"])
def test_every_built_in_plugin_passes(name: str, pegboard_project: Project) -> None:
    report = check_plugin(name, cwd=pegboard_project.root)
    assert report.problems == [], str(report)
    if name in ("fs", "shell", "web"):  # their own samples, and their matchers combine
        assert re.fullmatch(r"\d+ sample rules on \d+ sample calls, \d+ combined groups", report.checked[1])
    elif name in ("skills", "subtasks"):
        assert re.fullmatch(r"\d+ sample rules on \d+ sample calls", report.checked[1])


def test_the_command_prints_a_line_per_problem_and_exits_1(plugin_module: Callable[[str], str],
                                                           pegboard_project: Project) -> None:
    broken = plugin_module(GOOD.replace('handler=f"{__name__}:greet"', 'handler=f"{__name__}:gret"')
                           .replace('DESCRIPTION = "Greets someone by name."', 'DESCRIPTION = ""'))
    result = CLIRunner(pegboard_project.root, {"greet": broken})("plugins", "check", "greet")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("greet: tool Greet") for line in lines), lines
    good = CLIRunner(pegboard_project.root, {"greet": plugin_module(GOOD)})("plugins", "check", "greet", "--json")
    assert good.exit_code == 0 and json.loads(good.stdout)["ok"] is True
    installed = CLIRunner(pegboard_project.root, installed=None)("plugins", "check", "fs")
    assert installed.exit_code == 0 and installed.stdout.startswith("fs: ")

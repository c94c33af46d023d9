"""Issue 33, items 5 and 6 (4 of the brief): ``plugins check`` reports a
cause once, with the plugin's own file and line, and nothing derived from
it; a misspelt ``@hookimpl`` function is reported with file and line by the
check and by ``doctor``."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, Project, check_plugin

MODULE = '''
from pydantic import BaseModel


class TicketInput(BaseModel):
    title: str


def create(args, ctx):
    return f"created {args.title}"


def show(args, ctx):
    return f"ticket {args.title}"
'''

PLUGIN = '''
from pegboard import RuleSamples, Tool, hookimpl


@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="TicketCreate", handler="{pkg}._tool:create", input_model="{pkg}._tool:{model}",
                  description="Creates a ticket."))
    register(Tool(name="TicketShow", handler="{pkg}._tool:show", input_model="{pkg}._tool:TicketInput",
                  read_only=True, permission="read", description="Shows a ticket."))


class Title:
    def __init__(self, rule):
        self.prefix = rule.specifier.strip()

    def matches(self, request):
        return request.input["title"].startswith(self.prefix)

    def describe(self):
        return f"titles starting {{self.prefix!r}}"


@hookimpl
def {matcher_hook}(rule, context):
    if rule.tool not in ("TicketCreate", "TicketShow") or rule.specifier is None:
        return None
    return Title(rule)


@hookimpl
def pegboard_rule_samples():
    return RuleSamples(rules=["TicketCreate(WEB)", "TicketShow(WEB)"],
                       calls=[("TicketCreate", {{"title": "WEB-1"}}), ("TicketShow", {{"title": "OPS-2"}})])


@hookimpl
def {doctor_hook}(config):
    return []
'''


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., tuple[str, Path]]]:
    made: list[str] = []

    def make(**changes: str) -> tuple[str, Path]:
        pkg = f"tickets_{len(made)}"
        folder = tmp_path / "site" / pkg
        folder.mkdir(parents=True)
        values = {"pkg": pkg, "model": "TicketInput", "matcher_hook": "pegboard_rule_matcher",
                  "doctor_hook": "pegboard_doctor", **changes}
        (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(**values)))
        (folder / "_tool.py").write_text(MODULE)
        made.append(pkg)
        return pkg, folder / "__init__.py"

    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield make
    for name in [m for m in sys.modules if m.startswith("tickets_")]:
        del sys.modules[name]


def test_the_sound_plugin_passes(make: Callable[..., tuple[str, Path]], pegboard_project: Project) -> None:
    pkg, _ = make()
    checked = check_plugin("tickets", pkg, cwd=pegboard_project.root)
    assert checked.problems == [] and checked.notes == [], str(checked)


def test_a_misspelt_input_model_is_one_line_naming_the_plugin(make: Callable[..., tuple[str, Path]],
                                                              pegboard_project: Project) -> None:
    pkg, init = make(model="TicketInptu")
    checked = check_plugin("tickets", pkg, cwd=pegboard_project.root)
    assert checked.notes == [], checked.notes
    assert len(checked.problems) == 1, checked.problems
    line = (init.read_text().splitlines().index(
        '    register(Tool(name="TicketCreate", handler="tickets_0._tool:create", '
        'input_model="tickets_0._tool:TicketInptu",') + 1)
    assert checked.problems[0] == (
        f"tool TicketCreate: input model '{pkg}._tool:TicketInptu' does not resolve: AttributeError: {pkg}._tool "
        f"({init.parent / '_tool.py'}) has no attribute 'TicketInptu' (named at {init}:{line})")
    assert "core/_api/tools.py" not in checked.problems[0]


def test_a_misspelt_rule_matcher_is_the_one_cause(make: Callable[..., tuple[str, Path]],
                                                  pegboard_project: Project) -> None:
    pkg, init = make(matcher_hook="pegboard_rule_matchr")
    checked = check_plugin("tickets", pkg, cwd=pegboard_project.root)
    assert len(checked.problems) == 1, checked.problems
    assert checked.problems[0].startswith(f"pegboard_rule_matchr ({init}:")
    assert checked.problems[0].endswith("matches no hook specification, so it is never called")


def test_a_misspelt_hook_name_is_reported_by_check_and_doctor(make: Callable[..., tuple[str, Path]],
                                                              pegboard_project: Project) -> None:
    pkg, init = make(doctor_hook="pegbaord_doctor")
    line = init.read_text().splitlines().index("def pegbaord_doctor(config):") + 1
    said = (f"pegbaord_doctor ({init}:{line}) matches no hook specification (hooks are named pegboard_...), "
            "so it is never called")
    checked = check_plugin("tickets", pkg, cwd=pegboard_project.root)
    assert checked.problems == [said], checked.problems
    doctor = CLIRunner(pegboard_project.root, {"tickets": pkg})("doctor")
    assert f"WARN  plugin tickets: {said}" in doctor.stdout, doctor.stdout

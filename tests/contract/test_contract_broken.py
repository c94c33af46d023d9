"""Issue 33, items 2, 4 and 7: one rule for a tool that cannot work. Whether
its input model, its handler or its description fails to resolve, it is left
out of the catalogue and the calls, shown ``broken:`` with the reason by
``tools list`` (exit 1, a line on stderr), ``plugins list`` and ``doctor``,
and ``plugins check`` says the same, once, naming the plugin's own file."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, Project, check_plugin, load_toolbox

TOOL_MODULE = '''
from pydantic import BaseModel


class EchoInput(BaseModel):
    text: str


def echo(args, ctx):
    return args.text
'''

PLUGIN = '''
from pegboard import RuleSamples, Tool, hookimpl


@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Echo", handler="{pkg}._tool:{handler}", input_model="{pkg}._tool:{model}",
                  read_only=True, permission="read", description="Says the text back."))
    register(Tool(name="Fine", handler="{pkg}._tool:echo", input_model="{pkg}._tool:EchoInput",
                  read_only=True, permission="read", description="Says the text back too."))


@hookimpl
def pegboard_tool_description(tool, context):
    if tool.name == "Echo" and {description_fails}:
        raise OSError("descriptions/Echo.md is unreadable")
    return None


@hookimpl
def pegboard_rule_samples():
    return RuleSamples(rules=["Echo", "Fine"], calls=[("Echo", {{"text": "a"}}), ("Fine", {{"text": "b"}})])
'''

BREAKS = {
    "input model": ({"model": "EchoInptu"}, "input model '{pkg}._tool:EchoInptu' does not resolve: AttributeError: "
                                            "{pkg}._tool ({file}) has no attribute 'EchoInptu' (named at {init}:"),
    "handler": ({"handler": "ehco"}, "handler '{pkg}._tool:ehco' does not resolve: AttributeError: "
                                     "{pkg}._tool ({file}) has no attribute 'ehco' (named at {init}:"),
    "description": ({"description_fails": "True"}, "its description failed: OSError: descriptions/Echo.md is "
                                                   "unreadable (at {init}:"),
}


@pytest.fixture(params=list(BREAKS))
def broken(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A plugin package with the tool Echo broken one way, Fine sound: (package, the reason's start)."""
    changes, reason = BREAKS[request.param]
    pkg = f"brokenkit_{request.param.replace(' ', '_')}"
    folder = tmp_path / "site" / pkg
    folder.mkdir(parents=True)
    values = {"pkg": pkg, "handler": "echo", "model": "EchoInput", "description_fails": "False", **changes}
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(**values)))
    (folder / "_tool.py").write_text(TOOL_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield pkg, reason.format(pkg=pkg, file=folder / "_tool.py", init=folder / "__init__.py")
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]


def test_each_kind_of_break_is_one_rule_everywhere(broken: tuple[str, str], pegboard_project: Project) -> None:
    pkg, reason = broken
    plugins = {"echo": pkg}
    cli = CLIRunner(pegboard_project.root, plugins)

    listed = cli("tools", "list")
    assert listed.exit_code == 1, listed.output
    row = next(line for line in listed.stdout.splitlines() if line.startswith("Echo "))
    assert f"broken: {reason}" in row, row
    assert any(line.startswith("pegboard: tool Echo (echo) is left out: broken: " + reason)
               for line in listed.stderr.splitlines()), listed.stderr
    assert any(line.startswith("Fine ") and line.endswith("available") for line in listed.stdout.splitlines())

    plugins_list = cli("plugins", "list")
    assert f"tool Echo is broken: {reason}" in plugins_list.stdout, plugins_list.stdout

    doctor = cli("doctor")
    assert doctor.exit_code == 1
    assert f"FAIL  echo: tool Echo: broken: {reason}" in doctor.stdout, doctor.stdout

    checked = check_plugin("echo", pkg, cwd=pegboard_project.root, installed=[])
    assert len(checked.problems) == 1 and checked.problems[0].startswith(f"tool Echo: {reason}"), checked.problems

    toolbox = load_toolbox(plugins, cwd=pegboard_project.root)
    session = toolbox.session()
    offered = [t["name"] for t in session.catalogue().to_anthropic()]
    assert "Echo" not in offered and "Fine" in offered
    import asyncio

    result = asyncio.run(session.call("Echo", {"text": "hi"}))
    assert result.is_error and result.text_content().startswith("Echo is not available: broken: " + reason)
    assert asyncio.run(session.call("Fine", {"text": "hi"})).text_content() == "hi"


def test_a_handler_bound_in_a_way_the_source_reading_misses_still_works(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       pegboard_project: Project) -> None:
    """A lazy handler is judged from its module's source; a name bound in a loop is checked by importing."""
    folder = tmp_path / "site" / "loopbound"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent('''
        from pegboard import Tool, hookimpl

        @hookimpl
        def pegboard_register_tools(register):
            register(Tool(name="Loop", handler="loopbound._tool:echo", description="Echoes.",
                          input_schema={"type": "object", "properties": {"text": {"type": "string"}}}))
    '''))
    (folder / "_tool.py").write_text("for echo in [lambda args, ctx: args['text']]:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    try:
        listed = CLIRunner(pegboard_project.root, {"loop": "loopbound"})("tools", "list")
        assert listed.exit_code == 0, listed.output
        assert any(line.startswith("Loop ") and line.endswith("available") for line in listed.stdout.splitlines())
    finally:
        for name in [m for m in sys.modules if m.startswith("loopbound")]:
            del sys.modules[name]

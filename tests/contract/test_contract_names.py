"""Issue 33, item 4 (3 of the brief): a built-in's tool names are reserved
whether or not the built-in is enabled or loaded, from the built-ins' own
declarations (``PEGBOARD_TOOL_NAMES``), and ``plugins check`` flags a taken
name."""

from __future__ import annotations

from typing import Any

import pytest

from pegboard import Tool, hookimpl
from pegboard.testing import CLIRunner, Project, check_plugin, load_toolbox


class Finder:
    """A third party's Grep, and a tool of its own."""

    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        for name in ("Grep", "FindThing"):
            register(Tool(name=name, handler=self.run, input_schema={"type": "object", "properties": {}},
                          read_only=True, permission="read", description="Finds things."))

    @staticmethod
    def run(args: Any, ctx: Any) -> str:
        return "found"


REFUSED = "tool 'Grep' not registered: the built-in plugin 'fs' has a tool of that name (reserved even while 'fs' is off)"


@pytest.mark.parametrize("installed", [None, ["fs"]])
def test_a_built_in_name_is_refused_while_the_built_in_is_off(installed: list[str] | None,
                                                              pegboard_project: Project) -> None:
    pegboard_project.config("[plugins.fs]\nenabled = false\n")
    toolbox = load_toolbox({"finder": Finder()}, cwd=pegboard_project.root, installed=installed)
    assert "Grep" not in toolbox.tools and "FindThing" in toolbox.tools
    assert REFUSED in toolbox.records["finder"].warnings


def test_tools_list_says_so_on_stderr(pegboard_project: Project) -> None:
    pegboard_project.config("[plugins.fs]\nenabled = false\n")
    listed = CLIRunner(pegboard_project.root, {"finder": Finder()}, installed=None)("tools", "list")
    assert f"pegboard: plugin 'finder': {REFUSED}" in listed.stderr.splitlines(), listed.stderr


def test_plugins_check_flags_the_taken_name(pegboard_project: Project) -> None:
    pegboard_project.config("[plugins.fs]\nenabled = false\n")
    checked = check_plugin("finder", Finder(), cwd=pegboard_project.root)
    assert REFUSED in checked.problems, checked.problems


def test_every_built_in_declares_the_names_it_registers(pegboard_project: Project) -> None:
    """The reservation comes from the plugins: each built-in's registered tools are among its declared ones."""
    import importlib

    toolbox = load_toolbox(cwd=pegboard_project.root, installed=None)
    for record in toolbox.records.values():
        if not record.builtin:
            continue
        declared = set(getattr(importlib.import_module(record.module), "PEGBOARD_TOOL_NAMES", ()))
        undeclared = {n for n in record.tools if "__" not in n} - declared
        assert not undeclared, f"{record.name} registers {undeclared} without declaring them"

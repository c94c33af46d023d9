"""A cold ``pegboard tools list`` judges tools as a listing needs (issue 35,
item 7): a ``"module:attr"`` input model or handler whose module is not
imported yet is read from its source, never imported, and no schema is
built; what the listing cannot see (a model whose schema fails) the
catalogue finds and leaves out alone."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from pegboard.testing import CLIRunner, Project, load_toolbox

PLUGIN = '''
from pegboard import Tool, hookimpl


@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Echo", handler="{pkg}._tool:echo", input_model="{pkg}._tool:EchoInput",
                  read_only=True, permission="read", description="Says the text back."))
    register(Tool(name="Odd", handler="{pkg}._tool:echo", input_model="{pkg}._odd:OddInput",
                  read_only=True, permission="read", description="Takes a field no schema can show."))
'''

TOOL = '''
from pydantic import BaseModel


class EchoInput(BaseModel):
    text: str


async def echo(args, ctx):
    return args.text
'''

ODD = '''
from typing import Callable

from pydantic import BaseModel, ConfigDict


class OddInput(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    hook: Callable[[int], int] | None = None
'''


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pkg = "listjudged"
    folder = tmp_path / "site" / pkg
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN.format(pkg=pkg)))
    (folder / "_tool.py").write_text(TOOL)
    (folder / "_odd.py").write_text(ODD)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield pkg
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]


def test_a_cold_listing_imports_no_model_or_handler_module(package: str, pegboard_project: Project) -> None:
    listed = CLIRunner(pegboard_project.root, {"judged": package})("tools", "list")
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert rows["Echo"].endswith("available") and rows["Odd"].endswith("available")
    assert f"{package}._tool" not in sys.modules and f"{package}._odd" not in sys.modules


def test_what_the_listing_cannot_see_the_catalogue_leaves_out_alone(package: str,
                                                                    pegboard_project: Project) -> None:
    toolbox = load_toolbox({"judged": package}, cwd=pegboard_project.root)
    offered = [t["name"] for t in toolbox.session().catalogue().to_anthropic()]
    assert "Echo" in offered and "Odd" not in offered
    assert toolbox.broken["Odd"].startswith("input model")

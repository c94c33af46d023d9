"""``pegboard plugins new NAME``: a ready plugin distribution to start from.

What it writes passes its own tests and ``pegboard plugins check NAME`` as
made (tests/core/cli/test_plugin_new.py installs one in a fresh venv and runs both),
so an author starts from something that works and changes one thing at a
time. The files are written here as text, not shipped as package data, so
that they are not pegboard modules themselves (mypy and the import layers
would check them as such).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from string import Template

__all__ = ["ScaffoldError", "new_plugin", "tool_name_for"]

_NAME = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*")
_TOOL = re.compile(r"[A-Z][A-Za-z0-9_]*")


class ScaffoldError(Exception):
    """The name or the place is not usable; the message says why."""


def tool_name_for(name: str) -> str:
    """``my-notes`` -> ``MyNotes``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part)


def new_plugin(name: str, parent: Path, *, tool: str | None = None,
               wrote: Callable[[Path], None] | None = None) -> Path:
    """Write the distribution ``pegboard-<name>`` in ``parent``; returns its
    folder. ``wrote(path)`` is told of each file once it is written."""
    if not _NAME.fullmatch(name):
        raise ScaffoldError(f"{name!r}: a plugin name is lower-case letters, digits, '_' and '-', starting "
                            "with a letter (it is the [plugins.<name>] table and the entry point's name)")
    tool = tool or tool_name_for(name)
    if not _TOOL.fullmatch(tool):
        raise ScaffoldError(f"{tool!r}: a tool name starts with a capital letter and holds letters, digits "
                            "and '_' (models see it)")
    package = "pegboard_" + name.replace("-", "_")
    folder = parent / f"pegboard-{name}"
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists; choose another --dir or remove it")
    values = {"name": name, "package": package, "tool": tool, "config_class": tool_name_for(name) + "Config",
              "input_class": tool + "Input"}
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": INIT,
        f"{package}/_tool.py": TOOL,
        f"{package}/descriptions/{tool}.md": DESCRIPTION,
        f"{package}/py.typed": "",
        "tests/test_plugin.py": TESTS,
    }
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values), encoding="utf-8")
        if wrote is not None:
            wrote(path)
    return folder


PYPROJECT = '''\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "pegboard-$name"
version = "0.1.0"
description = "A pegboard plugin: the $tool tool."
requires-python = ">=3.11"
dependencies = ["pegboard"]

[project.optional-dependencies]
test = ["pytest>=8"]

# pegboard finds the plugin through this entry point; its name is the
# plugin's name ([plugins.$name] in config.toml, `pegboard plugins check $name`).
[project.entry-points.pegboard]
$name = "$package"

[tool.setuptools]
packages = ["$package"]

[tool.setuptools.package-data]
$package = ["descriptions/*.md", "py.typed"]

[tool.pytest.ini_options]
testpaths = ["tests"]
# the tests load the package from this folder, installed or not
pythonpath = ["."]
'''

README = '''\
# pegboard-$name

A pegboard plugin with one tool, `$tool`.

```
pip install -e '.[test]'
pytest                          # the tests use pegboard.testing's fixtures
pegboard plugins check $name    # what pegboard checks before you ship
pegboard call $tool --input '{"name": "Ada"}'
```

Options, in `config.toml`:

```toml
[plugins.$name]
greeting = "Hi"
```

Rules: `$tool(<pattern>)` matches calls whose `name` matches the pattern,
such as `deny = ["$tool(B*)"]`.
'''

INIT = '''\
"""The $name plugin for pegboard.

This module is imported whenever pegboard starts, so it stays light: the
handler and the input model are named as "module:attribute" strings and
imported only when the tool is called or its schema is needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from pegboard import (
    InputFieldMatcher,
    PermissionRequest,
    PluginContext,
    Rule,
    RuleMatcher,
    RuleSamples,
    Tool,
    Vote,
    hookimpl,
)

# The plugin API this plugin is written against: it loads on any 1.x from 1.0 on.
PEGBOARD_API = "1.1"

TOOL = "$tool"


class $config_class(BaseModel):
    """``[plugins.$name]`` in config.toml (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid")
    greeting: str = "Hello"


@hookimpl
def pegboard_config_model() -> type[BaseModel]:
    return $config_class


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: Any) -> None:
    register(Tool(
        name=TOOL,
        handler="$package._tool:run",
        input_model="$package._tool:$input_class",
        read_only=True,
        permission="read",
        vote=vote,
    ))


def vote(request: PermissionRequest) -> Vote | None:
    # asked only about $tool's calls (Tool.vote); deny rules still apply on top
    return Vote.allow("$tool only answers with text")


@hookimpl
def pegboard_rule_matcher(rule: Rule, context: PluginContext) -> RuleMatcher | None:
    # $tool(<pattern>): calls whose name matches the shell-style pattern
    if rule.tool != TOOL or rule.specifier is None:
        return None
    return InputFieldMatcher(rule, "name")


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    # what `pegboard plugins check $name` compiles and tries
    return RuleSamples(
        rules=[f"{TOOL}(Ada)", f"{TOOL}(B*)", f"{TOOL}(*)"],
        calls=[(TOOL, {"name": "Ada"}), (TOOL, {"name": "Bob"}), (TOOL, {"name": "Cy"})],
    )
'''

TOOL = '''\
"""The $tool tool's input and handler (imported when the tool is first used)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from pegboard import ToolContext


class $input_class(BaseModel):
    name: str = Field(description="Who to greet.")


async def run(args: $input_class, ctx: ToolContext) -> str:
    return f"{ctx.config.greeting}, {args.name}!"
'''

DESCRIPTION = '''\
Greets someone by name.

Use it when the user asks to be greeted. Give `name`, the person's name;
the answer is one line of text.
'''

TESTS = '''\
"""The $name plugin's tests, on pegboard.testing's fixtures (a pytest
plugin pegboard installs): each test runs with its own config, data and
cache folders, in a project folder of its own."""

from __future__ import annotations

import json

import pytest

import $package

from pegboard.testing import call, decide


@pytest.fixture(autouse=True)
def _isolated(pegboard_env):
    """Every test away from your own pegboard config."""


@pytest.fixture
def pegboard_plugins():
    """The plugin under test, loaded from this checkout (installed or not)."""
    return {"$name": $package}


def test_the_tool_answers(pegboard_call):
    assert pegboard_call("$tool", {"name": "Ada"}).text_content() == "Hello, Ada!"


def test_the_greeting_comes_from_the_config(pegboard_load):
    toolbox = pegboard_load(config=\'[plugins.$name]\\ngreeting = "Hi"\\n\')
    assert call(toolbox, "$tool", {"name": "Ada"}).text_content() == "Hi, Ada!"


def test_an_unknown_option_is_a_config_error(pegboard_load):
    toolbox = pegboard_load(config="[plugins.$name]\\ngretting = 1\\n", strict=False)
    assert "gretting" in (toolbox.records["$name"].error or "")


def test_rules_in_the_plugin_s_grammar(pegboard_load):
    toolbox = pegboard_load(config=\'[permissions]\\ndeny = ["$tool(B*)"]\\n\')
    session = toolbox.session()
    assert decide(session, "$tool", {"name": "Ada"}).decision == "allow"
    refused = decide(session, "$tool", {"name": "Bob"})
    assert refused.decision == "deny" and "$tool(B*)" in refused.reason


def test_the_command_line(pegboard_cli):
    result = pegboard_cli("call", "$tool", "--input", json.dumps({"name": "Ada"}))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Hello, Ada!"


def test_plugins_check_passes(pegboard_check):
    report = pegboard_check("$name")
    assert report.problems == [], str(report)
'''

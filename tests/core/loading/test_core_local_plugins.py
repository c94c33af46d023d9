"""Plugins that are not installed: one-file plugins in the user's config
folder, and plugin objects handed to ``Toolbox.load(extra_plugins=...)``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from pegboard import Tool, Toolbox, Vote, hookimpl
from pegboard._cli.main import cli
from pegboard.testing import CLIRunner, PegboardEnv

GREET = '''
from pydantic import BaseModel
from pegboard import Tool, hookimpl

class Options(BaseModel):
    greeting: str = "Hello"

class GreetInput(BaseModel):
    name: str

async def greet(args, ctx):
    return f"{ctx.config.greeting}, {args.name}!"

@hookimpl
def pegboard_config_model():
    return Options

@hookimpl
def pegboard_register_tools(register):
    # a lazy handler string resolves: the file is imported as pegboard_local.<name>
    register(Tool(name="Greet", handler="pegboard_local.greet:greet", input_model=GreetInput,
                  read_only=True, permission="read", description="Greets someone."))
'''


def call(toolbox: Toolbox, name: str, arguments: dict[str, object]) -> str:
    return asyncio.run(toolbox.session().call(name, arguments)).text_content()


def test_a_file_in_the_user_plugins_folder_is_a_plugin(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("greet", GREET)
    pegboard_env.user_config('[plugins.greet]\ngreeting = "Hi"\n')
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["greet"])
    record = toolbox.records["greet"]
    assert (record.error, record.origin, record.file, record.module) == (None, "local", str(path),
                                                                         "pegboard_local.greet")
    assert record.hooks == ["pegboard_config_model", "pegboard_register_tools"]
    assert call(toolbox, "Greet", {"name": "Ada"}) == "Hi, Ada!"


def test_a_local_plugin_can_be_switched_off_and_fails_alone(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("greet", GREET)
    pegboard_env.local_plugin("broken", "raise RuntimeError('half written')\n")
    pegboard_env.local_plugin("_helper", "raise RuntimeError('helpers are not plugins')\n")
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["greet", "broken", "_helper"])
    assert "Greet" in toolbox.tools
    assert "RuntimeError: half written" in (toolbox.records["broken"].error or "")
    assert "_helper" not in toolbox.records
    pegboard_env.user_config("[plugins.greet]\nenabled = false\n")
    assert "Greet" not in Toolbox.load(cwd=tmp_path, plugins=["greet"]).tools


def test_a_changed_local_plugin_is_imported_again(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("greet", GREET)
    assert call(Toolbox.load(cwd=tmp_path, plugins=["greet"]), "Greet", {"name": "Ada"}) == "Hello, Ada!"
    path.write_text(textwrap.dedent(GREET).replace('"Hello"', '"Howdy"'), encoding="utf-8")
    os.utime(path, ns=(1, 1))
    assert call(Toolbox.load(cwd=tmp_path, plugins=["greet"]), "Greet", {"name": "Ada"}) == "Howdy, Ada!"


def test_a_checkout_cannot_add_a_plugin_even_trusted(pegboard_env: PegboardEnv, tmp_path: Path,
                                                      trust_project: object) -> None:
    for folder in (tmp_path / ".pegboard" / "plugins", tmp_path / "plugins"):
        folder.mkdir(parents=True)
        (folder / "greet.py").write_text(textwrap.dedent(GREET), encoding="utf-8")
    trust_project(tmp_path)  # type: ignore[operator]
    toolbox = Toolbox.load(cwd=tmp_path)
    assert "greet" not in toolbox.records and "Greet" not in toolbox.tools


def test_a_file_others_can_write_is_refused(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("greet", GREET)
    path.chmod(0o646)
    error = Toolbox.load(cwd=tmp_path, plugins=["greet"]).records["greet"].error or ""
    assert f"{path} is writable by every user" in error
    path.chmod(0o644)
    path.parent.chmod(0o777)
    try:
        error = Toolbox.load(cwd=tmp_path, plugins=["greet"]).records["greet"].error or ""
    finally:
        path.parent.chmod(0o755)
    assert f"{path.parent} is writable by every user" in error


def test_local_names_that_cannot_load_are_reported(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("my-tool", GREET)
    shadow = pegboard_env.local_plugin("fs", GREET)
    toolbox = Toolbox.load(cwd=tmp_path)
    assert toolbox.records["fs"].origin == "entry point"
    problems = "\n".join(toolbox.settings.problems)
    assert "my-tool.py: not loaded: a local plugin's file name must be a Python identifier" in problems
    assert f"{shadow}: not loaded: the installed plugin 'fs' has that name" in problems


def test_plugins_list_shows_the_origin_and_the_hooks(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    path = pegboard_env.local_plugin("greet", GREET)
    runner = CLIRunner(tmp_path, installed=["greet", "fs"])
    text = runner("plugins", "list").output
    assert f"greet        enabled   local {path}" in text
    assert "hooks: pegboard_config_model, pegboard_register_tools" in text
    rows = {r["name"]: r for r in json.loads(runner("plugins", "list", "--json").output)}
    assert rows["greet"]["origin"] == "local" and rows["greet"]["file"] == str(path)
    assert "pegboard_rule_matcher" in rows["fs"]["hooks"] and "pegboard_add_hooks" in rows["fs"]["hooks"]


def test_the_tools_listing_cache_notices_a_new_local_plugin(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(cli, ["--cwd", str(tmp_path), "tools", "list", "--json"]).output
    assert "Greet" not in first
    pegboard_env.local_plugin("greet", GREET)
    second = runner.invoke(cli, ["--cwd", str(tmp_path), "tools", "list", "--json"]).output
    assert "Greet" in [row["name"] for row in json.loads(second)]


# --- plugins handed over in code ------------------------------------------------


class Stamp:
    """A plugin that is an object, not a module."""

    @hookimpl
    def pegboard_register_tools(self, register: object) -> None:
        from pydantic import BaseModel

        class Empty(BaseModel):
            pass

        async def stamp(args: object, ctx: object) -> str:
            return "stamped"

        register(Tool(name="Stamp", handler=stamp, input_model=Empty, read_only=True,  # type: ignore[operator]
                      permission="read"))

    @hookimpl
    def pegboard_permission(self, request: object) -> Vote | None:
        return Vote.allow("stamping is harmless")


def test_given_plugins_load_alongside_or_instead_of_the_installed(tmp_path: Path) -> None:
    alongside = Toolbox.load(cwd=tmp_path, extra_plugins={"stamp": Stamp()})
    assert {"Stamp", "Read", "Bash"} <= set(alongside.tools)
    assert alongside.records["stamp"].origin == "given"
    instead = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"stamp": Stamp()})
    assert set(instead.records) == {"stamp"}
    assert call(instead, "Stamp", {}) == "stamped"


def test_a_given_module_or_import_string_loads_like_an_installed_one(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("given_greet")
    exec(compile(textwrap.dedent(GREET).replace("pegboard_local.greet:greet", "given_greet:greet"),
                 "given_greet", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "given_greet", module)
    module.PLUGIN = Stamp()  # type: ignore[attr-defined]
    for given, tool in ((module, "Greet"), ("given_greet", "Greet"), ("given_greet:PLUGIN", "Stamp")):
        toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"greet": given})
        assert toolbox.records["greet"].error is None, given
        assert tool in toolbox.tools, given
    bad = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"nope": "no_such_module_here"})
    assert "ModuleNotFoundError" in (bad.records["nope"].error or "")
    assert "failed to import no_such_module_here" in (bad.records["nope"].error or "")


def test_a_given_plugin_takes_the_place_of_an_installed_one_and_is_no_builtin(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs"], extra_plugins={"fs": Stamp()})
    record = toolbox.records["fs"]
    assert record.origin == "given" and not record.builtin
    assert "Read" not in toolbox.tools and "Stamp" in toolbox.tools

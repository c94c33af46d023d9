"""The CLI's names, JSON shapes and exit codes, which later checks depend on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard._cli.main import cli

ECHO = '''
from pydantic import BaseModel
from pegboard import Tool, ToolResult, Vote, hookimpl

class EchoIn(BaseModel):
    text: str

async def echo(args, ctx):
    if args.text == "fail":
        return ToolResult.error("asked to fail")
    return args.text

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Echo", handler=echo, input_model=EchoIn, read_only=True, permission="read"))
    register(Tool(name="Poke", handler=echo, input_model=EchoIn))
'''


def run(*args: str, cwd: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--cwd", str(cwd), *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def project(plugin_factory: PluginFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    plugin_factory.write(ECHO)
    monkeypatch.setenv("PEGBOARD_PLUGINS", "pipetest")
    return plugin_factory.root


def test_plugins_list_json(project: Path) -> None:
    code, out = run("plugins", "list", "--json", cwd=project)
    assert code == 0
    rows = json.loads(out)
    assert rows == [{"name": "pipetest", "version": "0.1", "distribution": "pipetest", "enabled": True,
                     "origin": "entry point", "file": None, "hooks": ["pegboard_register_tools"],
                     "tools": ["Echo", "Poke"], "error": None, "warnings": [], "broken_tools": {}}]


def test_tools_list_json_and_reasons(project: Path, plugin_factory: PluginFactory) -> None:
    plugin_factory.config("[tools]\nblock = ['Poke']\n")
    code, out = run("tools", "list", "--json", cwd=project)
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["Echo"] == {"name": "Echo", "plugin": "pipetest", "loading": "always", "read_only": True,
                            "permission": "read", "enabled": True, "status": "available", "absent": None}
    assert rows["Poke"]["enabled"] is False
    assert rows["Poke"]["status"].startswith("blocked by [tools]")
    # The cached answer notices a config change at once.
    plugin_factory.config("[plugins.pipetest]\nenabled = false\n")
    code, out = run("tools", "list", "--json", cwd=project)
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["Echo"]["enabled"] is False and rows["Echo"]["status"].startswith("disabled by [plugins.pipetest]")


def test_tools_list_mode_hides_what_the_level_does_not_offer(project: Path) -> None:
    code, out = run("tools", "list", "--json", "--mode", "read", cwd=project)
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["Echo"]["enabled"] is True
    assert rows["Poke"]["enabled"] is False and "not offered in read" in rows["Poke"]["status"]


def test_tools_show_json(project: Path) -> None:
    code, out = run("tools", "show", "Echo", "--json", cwd=project)
    assert code == 0
    data = json.loads(out)
    assert data["input_schema"]["properties"]["text"]["type"] == "string"
    assert "scratchpad" in data["input_schema"]["properties"]
    code, out = run("tools", "show", "Nope", cwd=project)
    assert code == 4  # no such tool (2 is a usage error)


def test_call_json_exit_codes(project: Path) -> None:
    code, out = run("call", "Echo", "--input", '{"text": "hi"}', "--json", cwd=project)
    assert code == 0
    assert json.loads(out) == {"is_error": False, "content": [{"type": "text", "text": "hi"}]}
    code, out = run("call", "Echo", "--input", '{"text": "fail"}', "--json", cwd=project)
    assert code == 1 and json.loads(out)["is_error"] is True
    code, out = run("call", "Echo", "--input", "{not json", cwd=project)
    assert code == 2


def test_call_that_would_ask_is_refused_without_a_terminal(project: Path) -> None:
    code, out = run("call", "Poke", "--input", '{"text": "x"}', "--json", cwd=project)
    assert code == 1
    text = json.loads(out)["content"][0]["text"]
    assert "Permission denied" in text and "[permissions] allow" in text
    code, out = run("call", "Poke", "--input", '{"text": "x"}', "--mode", "bypassPermissions", cwd=project)
    assert code == 0 and out.strip() == "x"


def test_config_path_and_show(project: Path, plugin_factory: PluginFactory) -> None:
    config = plugin_factory.config("[background]\nenabled = true\n")
    code, out = run("config", "path", cwd=project)
    assert code == 0 and str(config) in out
    code, out = run("config", "show", "--json", cwd=project)
    rows = {r["key"]: r for r in json.loads(out)}
    assert rows["background.enabled"] == {"key": "background.enabled", "value": True, "source": str(config)}
    assert rows["results.max_chars"]["source"] == "defaults"


def test_doctor_fails_on_a_broken_plugin(project: Path, plugin_factory: PluginFactory,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = run("doctor", cwd=project)
    assert code == 0 and "OK    plugin pipetest: 2 tools" in out
    plugin_factory.write("raise ImportError('missing dependency')", name="broken")
    monkeypatch.setenv("PEGBOARD_PLUGINS", "pipetest,broken")
    code, out = run("doctor", cwd=project)
    assert code == 1 and "FAIL  plugin broken: failed to import" in out


def test_config_error_exits_2_and_names_the_file(project: Path, plugin_factory: PluginFactory) -> None:
    config = plugin_factory.config("[permissions]\nmode = 'yolo'\n")
    result = CliRunner().invoke(cli, ["--cwd", str(project), "tools", "show", "Echo"])
    assert result.exit_code == 2
    assert str(config) in result.output and "unknown mode or level 'yolo'" in result.output


@pytest.mark.slow
def test_real_console_script(tmp_path: Path) -> None:
    exe = shutil.which("pegboard") or str(Path(sys.executable).parent / "pegboard")
    env = {**os.environ, "PEGBOARD_PLUGINS": "fs"}
    out = subprocess.run([exe, "--cwd", str(tmp_path), "tools", "list", "--json"], capture_output=True,
                         text=True, env=env, check=True)
    names = {r["name"] for r in json.loads(out.stdout)}
    assert "ToolSearch" in names or "ScratchpadRead" in names


@pytest.mark.slow
def test_call_asks_the_person_at_a_terminal(project: Path, plugin_factory: PluginFactory) -> None:
    from _terminal import converse as terminal

    def converse(answer: bytes) -> tuple[int, str]:
        return terminal(["--cwd", str(project), "call", "Poke", "--input", '{"text": "poked"}'], {b"Allow?": answer})

    code, out = converse(b"y\n")
    assert code == 0, out
    assert "Poke wants to run" in out and out.rstrip().endswith("poked")
    code, out = converse(b"n\n")
    assert code == 1 and "declined" in out
    code, out = converse(b"a\n")
    assert code == 0
    # Kept in the person's config folder, keyed by the project: never in the checkout.
    from pegboard._loading.trust import project_grants_file
    from pegboard.paths import config_dir

    assert "Poke" in project_grants_file(config_dir(), plugin_factory.root).read_text()
    assert not (plugin_factory.root / ".pegboard" / "granted.toml").exists()
    # Remembered for the project: the next call runs without asking, even headless.
    code, out = run("call", "Poke", "--input", '{"text": "again"}', cwd=project)
    assert code == 0 and out.strip() == "again"


@pytest.mark.slow
@pytest.mark.parametrize("imports", [
    "from pegboard.cli import CLIState, global_options",
    # what docs/plugins.md taught before pegboard.cli existed: still works, with a warning
    "from pegboard._cli.main import CLIState, global_options",
])
def test_plugin_command_sees_options_given_after_its_name(plugin_factory: PluginFactory, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, imports: str) -> None:
    plugin_factory.write('''
import click
from pegboard import hookimpl
''' + imports + '''

@hookimpl
def pegboard_register_commands(cli):
    @cli.command("where")
    @global_options
    def where():
        state = click.get_current_context().find_object(CLIState)
        click.echo(state.toolbox().settings.root)
''', name="wherecmd")
    monkeypatch.setenv("PEGBOARD_PLUGINS", "wherecmd")
    other = tmp_path / "elsewhere"
    other.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(cli, ["where", "--cwd", str(other)], catch_exceptions=False)
    assert result.exit_code == 0 and result.output.strip() == str(other.resolve())
    deprecations = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert deprecations == (["pegboard._cli.main.CLIState is private and will be removed in the next release; "
                             "import pegboard.cli.CLIState instead"] if "._cli" in imports else [])


def test_cli_module_stays_light() -> None:
    """A warm `tools list` answers from the inventory cache; that only helps
    if importing the CLI does not already pull in pydantic models and asyncio."""
    code = ("import sys, pegboard._cli.main, pegboard.cli; "
            "print(sorted(m for m in ('pegboard._api.tools', 'pegboard._engine.toolbox', 'pegboard._api.decisions', 'pydantic.main', 'asyncio', 'ctypes') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"



READ_CHECK = ["permissions", "check", "Read", "--input", '{"file_path": "x"}']
OWN_MODULE_COMMANDS = tuple(f"pegboard._cli_{name}" for name in ("approvals", "audit", "plugins", "sessions", "store",
                                                                 "trust"))


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "absent", "shown"), [
    # Deciding needs no event loop: asyncio (and the ssl it imports) was
    # about 40 ms of a cold check. Only running a tool imports it.
    (READ_CHECK, ("asyncio", "ssl"), "allow"),
    # Protected paths and path rules compile when a write or a path rule is
    # first decided: a read with no path rule needs no pathspec.
    (READ_CHECK, ("pathspec",), "allow"),
    # Registering tools reads no agent definition and runs no search: neither the
    # definitions' parser nor WebSearch's handler (with its address checks) is imported.
    (READ_CHECK, ("pegboard.plugins.subtasks._definitions", "pegboard.plugins.web._websearch",
                  "pegboard.plugins.web._addresses"), "allow"),
    # With no skill to parse and no file missing, no YAML (about 20 ms) and no difflib.
    (["tools", "list"], ("yaml", "difflib"), "Read"),
    # With no config, trust or grant file there is no TOML to read or write, and
    # registering Bash asks Landlock before it would start bubblewrap's trial.
    # (A cold listing decides Bash's permission examples, which asks which box would run them:
    # bubblewrap's trial, a process, and the sandbox's modules; it runs no command.)
    (READ_CHECK, ("tomllib", "tomli_w", "subprocess"), "allow"),
    (["tools", "list"], ("tomllib", "tomli_w"), "Read"),
    # The built-in command groups of their own modules load when one of them runs.
    (READ_CHECK, OWN_MODULE_COMMANDS, "allow"),
    # A session that only decides makes no background tasks and runs no call.
    (READ_CHECK, ("pegboard._api.tasks", "pegboard._api.calls"), "allow"),
    # With no MCP server configured, neither its approvals and recorded lists nor its sign-ins.
    (READ_CHECK, ("pegboard.plugins.mcp._store", "pegboard.plugins.mcp._tokens"), "allow"),
    (["tools", "list"], ("pegboard.plugins.mcp._store", "pegboard.plugins.mcp._tokens"), "Read"),
    # Bash's level is learnt from _confine; the sandbox and the Landlock launcher wait for a command.
    (READ_CHECK, ("pegboard.plugins.shell._sandbox", "pegboard.plugins.shell._landlock"), "allow"),
    (["tools", "list"], OWN_MODULE_COMMANDS, "Read"),
    # A decision on a plugin's tool defines none of the core's own tools' input models.
    (READ_CHECK, ("pegboard._builtin.inputs",), "allow"),
    # A decision on a Read defines Read's input model, not the other fs tools'.
    (READ_CHECK, ("pegboard.plugins.fs._models",), "allow"),
    # Loading the web plugin builds its config, not its tools' input models.
    (READ_CHECK, ("pegboard.plugins.web._models",), "allow"),
    # A listing builds the skill tools' models without running their handlers' module (it judges
    # each tool's description too, and Skill's lists the skills: issue 33's one rule for broken tools).
    (["tools", "list"], ("pegboard.plugins.skills._handlers",), "Read"),
])
def test_a_cold_command_imports_only_what_it_uses(tmp_path: Path, argv: list[str], absent: tuple[str, ...],
                                                   shown: str) -> None:
    code = ("import sys\nfrom pegboard._cli.main import main\n"
            f"sys.argv = ['pegboard', '--cwd', {str(tmp_path)!r}, *{argv!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {absent!r} if m in sys.modules], file=sys.stderr)\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CACHE_HOME": str(tmp_path / "k"), "PEGBOARD_POLICY": str(tmp_path / "none.toml")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert shown in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "[]"


def _run_cold(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CACHE_HOME": str(tmp_path / "k"), "PEGBOARD_POLICY": str(tmp_path / "none.toml")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)


@pytest.mark.slow
def test_a_cold_check_builds_no_result_model(tmp_path: Path) -> None:
    """A decision makes no ToolResult: its models (and their content parts)
    are built on first use, not at import (defer_build)."""
    out = _run_cold(tmp_path, (
        "import sys\nfrom pegboard._cli.main import main\n"
        f"sys.argv = ['pegboard', '--cwd', {str(tmp_path)!r}, *{READ_CHECK!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from pegboard._api import tools as t\n"
        "print([m.__name__ for m in (t.ToolResult, t.TextContent, t.ImageContent, t.ResourceContent) "
        "if m.__pydantic_complete__], file=sys.stderr)\n"
        "result = t.ToolResult.text('built on first use')\n"
        "print(result.content[0].text, t.ToolResult.__pydantic_complete__, file=sys.stderr)\n"))
    assert "allow" in out.stdout
    assert out.stderr.strip().splitlines()[-2:] == ["[]", "built on first use True"]


@pytest.mark.slow
@pytest.mark.parametrize(("how", "frozen"), [("main", True), ("runner", False)])
def test_only_the_console_script_freezes_what_a_load_made(tmp_path: Path, how: str, frozen: bool) -> None:
    """The console script (``main``) ends with its command, so what the
    toolbox load made is frozen out of the collector's walks; the CLI run in a
    process that goes on (a test's runner, an embedding) leaves the collector alone."""
    run_it = ("from pegboard._cli.main import main\n"
              f"sys.argv = ['pegboard', '--cwd', {str(tmp_path)!r}, *{READ_CHECK!r}]\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n") if how == "main" else (
              "from click.testing import CliRunner\nfrom pegboard._cli.main import cli\n"
              f"print(CliRunner().invoke(cli, ['--cwd', {str(tmp_path)!r}, *{READ_CHECK!r}]).output)\n")
    out = _run_cold(tmp_path, "import gc, sys\n" + run_it
                    + "print(gc.get_freeze_count(), gc.isenabled(), file=sys.stderr)\n")
    assert "allow" in out.stdout
    count, enabled = out.stderr.strip().splitlines()[-1].split()
    assert (int(count) > 10_000) if frozen else (int(count) == 0)
    assert enabled == "True"  # the collector, paused for the load, runs again


@pytest.mark.slow
def test_the_console_script_leaves_a_paused_collector_paused(tmp_path: Path) -> None:
    out = _run_cold(tmp_path, (
        "import gc, sys\ngc.disable()\nfrom pegboard._cli.main import main\n"
        f"sys.argv = ['pegboard', '--cwd', {str(tmp_path)!r}, *{READ_CHECK!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gc.isenabled(), file=sys.stderr)\n"))
    assert "allow" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "False"


def test_commands_of_their_own_modules_are_listed_and_run(tmp_path: Path) -> None:
    """Imported when asked for, they are still listed by --help and run by name."""
    code, out = run("--help", cwd=tmp_path)
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert code == 0 and {"approvals", "audit", "plugins", "sessions", "store", "trust"} <= listed
    code, out = run("trust", "--list", "--json", cwd=tmp_path)
    assert code == 0 and json.loads(out) == []
    code, out = run("plugins", "list", "--json", cwd=tmp_path)
    assert code == 0 and "fs" in {p["name"] for p in json.loads(out)}

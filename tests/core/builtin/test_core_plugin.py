"""The core's own tools (ToolSearch, Scratchpad*, Task*) come from a plugin
the plugin manager registers under the name ``core``, through the hooks any
plugin implements, not from a special case in the toolbox."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path

from pydantic import BaseModel

from pegboard import Tool, Toolbox, hookimpl

CORE_TOOLS = {"ToolSearch", "ScratchpadRead", "ScratchpadList", "TaskList", "TaskOutput", "TaskStop"}


class StopInput(BaseModel):
    task_id: str


async def my_stop(args: StopInput, ctx: object) -> str:
    return f"my stop {args.task_id}"


def _plugin(**hooks: object) -> types.SimpleNamespace:
    return types.SimpleNamespace(**{name: hookimpl(fn) for name, fn in hooks.items()})  # type: ignore[arg-type]


def test_the_core_is_a_plugin_registered_under_its_name(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    core = toolbox.plugins.pm.get_plugin("core")
    assert core is not None
    hooks = {caller.name for caller in toolbox.plugins.pm.get_hookcallers(core) or ()}
    assert hooks == {"pegboard_register_tools", "pegboard_store_schema"}
    record = toolbox.plugins.records["core"]
    assert (record.origin, record.module, record.error, set(record.tools)) == ("core", "pegboard", None,
                                                                              CORE_TOOLS)
    assert {n for n, t in toolbox.tools.items() if t.plugin == "core"} == CORE_TOOLS
    # listings of plugins show the plugins, not the core
    assert "core" not in toolbox.records
    # the core's context is a plugin context like the others
    context = toolbox.context_for("core")
    assert context is not None and context.name == "core" and context.package == "pegboard"


def test_the_cores_vote_is_its_tools_own(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    session = toolbox.session("default")
    decision = asyncio.run(session.decide("TaskStop", {"task_id": "t1"}))
    assert (decision.decision, decision.reason) == ("allow", "TaskStop stops this session's own background task")
    result = asyncio.run(session.call("TaskStop", {"shell_id": "nope"}))
    assert result.is_error and "No running task 'nope'" in result.text_content()


def test_a_plugins_tool_of_a_core_name_takes_its_place_quietly(tmp_path: Path) -> None:
    def register(register: object) -> None:
        register(Tool(name="TaskStop", handler=my_stop, input_model=StopInput, permission="read"))  # type: ignore[operator]

    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"mystop": _plugin(
        pegboard_register_tools=register)})
    assert toolbox.tools["TaskStop"].plugin == "mystop"
    assert "TaskStop" not in toolbox.plugins.records["core"].tools
    assert toolbox.records["mystop"].warnings == [] and toolbox.plugins.records["core"].warnings == []
    # the core's vote is for its own TaskStop only
    decision = asyncio.run(toolbox.session("default").decide("TaskStop", {"task_id": "t"}))
    assert "own background task" not in decision.reason
    result = asyncio.run(toolbox.session("bypassPermissions").call("TaskStop", {"task_id": "t"}))
    assert result.text_content() == "my stop t"


def test_a_core_name_a_built_in_also_has_stays_the_core_s_while_the_built_in_is_off(tmp_path: Path) -> None:
    """TaskStop is the core's and the shell plugin's: with the shell switched off, it is still reserved."""
    def register(register: object) -> None:
        register(Tool(name="TaskStop", handler=my_stop, input_model=StopInput, permission="read"))  # type: ignore[operator]

    (tmp_path / ".pegboard").mkdir()
    (tmp_path / ".pegboard" / "config.toml").write_text("[plugins.shell]\nenabled = false\n")
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["shell"], extra_plugins={"mystop": _plugin(
        pegboard_register_tools=register)})
    assert toolbox.tools["TaskStop"].plugin == "core"
    decision = asyncio.run(toolbox.session("default").decide("TaskStop", {"task_id": "t"}))
    assert "own background task" in decision.reason
    assert any("'TaskStop' not registered: the built-in plugin 'shell'" in w for w in toolbox.records["mystop"].warnings)


def test_no_plugin_may_take_the_cores_name(tmp_path: Path) -> None:
    def register(register: object) -> None:
        register(Tool(name="Impostor", handler=my_stop, input_model=StopInput, permission="read"))  # type: ignore[operator]

    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"core": _plugin(
        pegboard_register_tools=register)})
    assert "Impostor" not in toolbox.tools and "TaskList" in toolbox.tools
    assert any("'core' is the core's own name" in p for p in toolbox.settings.problems)


def test_the_core_cannot_be_switched_off_and_says_so(isolated_env: Path, tmp_path: Path) -> None:
    path = isolated_env / "config" / "pegboard" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[plugins.core]\nenabled = false\n", encoding="utf-8")
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    assert "TaskList" in toolbox.tools
    assert any("[plugins.core] enabled: the core's own tools cannot be switched off" in p
               for p in toolbox.settings.problems)


def test_the_cores_tables_come_through_its_own_store_schema_hook(tmp_path: Path) -> None:
    """The core declares sessions, the scratchpad, the audit log and pending calls as a plugin
    declares its tables, under the component name databases already record ("pegboard")."""
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    core = toolbox.plugins.pm.get_plugin("core")
    declared = core.pegboard_store_schema()
    schema = toolbox.plugins.store_schema("pegboard")
    assert schema is not None and schema.version == declared.version
    assert set(schema.metadata.tables) == set(declared.metadata.tables) and "pegboard_sessions" in schema.metadata.tables
    assert toolbox.plugins.store_schema("core") is None  # never a second copy under the plugin's name
    assert list(toolbox.plugins.schemas()) == ["pegboard"]


def test_the_cores_command_groups_come_through_pegboard_register_commands(tmp_path: Path) -> None:
    import click
    from click.testing import CliRunner

    from pegboard._api import hookspecs as _hookspecs
    from pegboard._cli.main import cli
    from pegboard._cli.commands import CORE_COMMANDS

    # the implementation takes only what the specification offers, as a plugin's must
    spec = _hookspecs.pegboard_register_commands.__code__.co_varnames[:2]
    impl = CORE_COMMANDS.pegboard_register_commands.__code__.co_varnames[1:2]
    assert set(impl) <= set(spec)
    group = click.Group()
    CORE_COMMANDS.pegboard_register_commands(cli=group)
    assert sorted(group.commands) == ["approvals", "audit", "plugins", "sessions", "store", "trust"]
    # and they answer when the configuration does not load, which a plugin's commands cannot
    (tmp_path / "broken.toml").write_text("[permissions\n")
    for name in ("trust", "store", "audit"):
        result = CliRunner().invoke(cli, ["--cwd", str(tmp_path), "--config", str(tmp_path / "broken.toml"),
                                          name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, (name, result.output)

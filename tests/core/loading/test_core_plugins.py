"""Discovery, isolation of broken plugins, disabling, config errors, [tools]."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import ConfigError, Toolbox

ECHO = '''
from pydantic import BaseModel, ConfigDict
from pegboard import Tool, ToolResult, hookimpl

class EchoIn(BaseModel):
    text: str

class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout_s: float = 1.0

async def echo(args, ctx):
    return args.text

@hookimpl
def pegboard_config_model():
    return Options

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Echo", handler=echo, input_model=EchoIn, read_only=True, permission="read"))
    register(Tool(name="Shout", handler=echo, input_model=EchoIn, loading="deferred"))
'''


def test_builtin_plugins_come_through_entry_points() -> None:
    toolbox = Toolbox.load(cwd=Path.cwd())
    names = set(toolbox.records)
    assert {"fs", "shell", "subtasks", "web", "skills", "schedule", "mcp"} <= names
    for name in ("fs", "shell", "subtasks", "web", "skills", "schedule", "mcp"):
        record = toolbox.records[name]
        assert record.distribution == "pegboard"
        assert record.module == f"pegboard.plugins.{name}"


def test_core_never_imports_a_plugin_by_name() -> None:
    core = Path(__file__).parents[3] / "core"
    for path in core.rglob("*.py"):
        assert "pegboard.plugins" not in path.read_text(), path


def test_third_party_plugin_is_discovered(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(ECHO)
    assert toolbox.records["pipetest"].distribution == "pipetest"
    assert toolbox.records["pipetest"].tools == ["Echo", "Shout"]
    assert {"Echo", "Shout"} <= set(toolbox.tools)


@pytest.mark.parametrize("broken, expected", [
    ("raise RuntimeError('boom at import')", "failed to import"),
    ("from pegboard import hookimpl\n@hookimpl\ndef pegboard_register_tools(register, nonsense):\n    pass\n",
     "failed validation"),
    ("from pegboard import hookimpl\n@hookimpl\ndef pegboard_register_tools(register):\n"
     "    raise ValueError('boom while registering')\n", "failed while registering"),
    ("from pegboard import hookimpl\n@hookimpl\ndef pegboard_register_tools(register):\n"
     "    register('not a tool')\n", "failed while registering"),
])
def test_broken_plugin_is_isolated(plugin_factory: PluginFactory, broken: str, expected: str) -> None:
    plugin_factory.write(ECHO, name="good")
    plugin_factory.write(broken, name="broken")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["good", "broken"])
    record = toolbox.records["broken"]
    assert record.error is not None and expected in record.error
    assert record.distribution == "broken"
    assert toolbox.records["good"].error is None
    assert "Echo" in toolbox.tools


def test_duplicate_tool_name_is_reported_not_overwritten(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(ECHO, name="first")
    plugin_factory.write(ECHO, name="second")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["first", "second"])
    assert toolbox.tools["Echo"].plugin == "first"
    second = toolbox.records["second"]
    # the later tool is refused with a report; the rest of that plugin loads
    assert second.error is None and second.tools == []
    assert second.warnings == ["tool 'Echo' not registered: plugin 'first' registered one of that name first",
                               "tool 'Shout' not registered: plugin 'first' registered one of that name first"]


def test_pegboard_plugins_env_restricts_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEGBOARD_PLUGINS", "fs, web")
    toolbox = Toolbox.load(cwd=Path.cwd())
    assert set(toolbox.records) == {"fs", "web"}


def test_disabled_plugin_registers_nothing_and_is_not_imported(plugin_factory: PluginFactory) -> None:
    module = plugin_factory.write(ECHO)
    plugin_factory.config("[plugins.pipetest]\nenabled = false\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    assert "Echo" not in toolbox.tools
    assert toolbox.records["pipetest"].enabled is False
    assert module not in sys.modules
    assert toolbox.session().call  # the toolbox still works


def test_disabled_plugin_tools_are_listed_with_the_reason(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(ECHO)
    config = plugin_factory.config("[plugins.pipetest]\nenabled = false\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"], inventory=True)
    status = toolbox.statuses["Echo"]
    assert not status.enabled
    assert status.status == f"disabled by [plugins.pipetest] in {config}"
    assert "Echo" not in toolbox.tools


def test_plugin_config_reaches_handlers_and_wrong_types_name_file_and_key(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(ECHO)
    config = plugin_factory.config('[plugins.pipetest]\ntimeout_s = "soon"\n')
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    error = toolbox.records["pipetest"].error
    assert error == f"{config}: [plugins.pipetest] timeout_s: expected a number"
    assert "Echo" not in toolbox.tools


def test_plugin_config_typo_is_reported(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(ECHO)
    config = plugin_factory.config("[plugins.pipetest]\ntimeout = 3\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    assert toolbox.records["pipetest"].error == (f"{config}: [plugins.pipetest] timeout: unknown key; "
                                                 "did you mean 'timeout_s'?")


def test_core_config_errors_name_file_and_key(tmp_path: Path) -> None:
    config = tmp_path / ".pegboard" / "config.toml"
    config.parent.mkdir()
    config.write_text("[background]\nenabled = 'yes please'\n[tools]\nblok = ['Bash']\n")
    with pytest.raises(ConfigError) as info:
        Toolbox.load(cwd=tmp_path, plugins=[])
    assert f"{config}: [background] enabled: expected true or false" in info.value.problems
    assert f"{config}: [tools] blok: unknown key; did you mean 'block'?" in info.value.problems


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / ".pegboard" / "config.toml"
    config.parent.mkdir()
    config.write_text("[plugins.web\n")
    with pytest.raises(ConfigError, match=str(config)):
        Toolbox.load(cwd=tmp_path, plugins=[])


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        Toolbox.load(cwd=tmp_path, config=tmp_path / "nope.toml", plugins=[])


def test_unknown_plugin_table_is_reported(tmp_path: Path) -> None:
    config = tmp_path / ".pegboard" / "config.toml"
    config.parent.mkdir()
    config.write_text("[plugins.wbe]\nenabled = false\n")
    toolbox = Toolbox.load(cwd=tmp_path)
    assert f"{config}: [plugins.wbe]: no installed plugin is called 'wbe'; did you mean 'web'?" in toolbox.settings.problems


def test_layers_override_in_order(plugin_factory: PluginFactory, isolated_env: Path, tmp_path: Path) -> None:
    plugin_factory.write(ECHO)
    user = isolated_env / "config" / "pegboard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[plugins.pipetest]\ntimeout_s = 2\n")
    project = plugin_factory.config("[plugins.pipetest]\ntimeout_s = 3\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    assert toolbox.plugin_config("pipetest").timeout_s == 3
    assert toolbox.settings.source_of("plugins", "pipetest", "timeout_s") == str(project)
    explicit = tmp_path / "explicit.toml"
    explicit.write_text("[plugins.pipetest]\ntimeout_s = 4\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"], config=explicit)
    assert toolbox.plugin_config("pipetest").timeout_s == 4


def test_tools_block_allow_and_permission_override(plugin_factory: PluginFactory) -> None:
    config = plugin_factory.config(
        "[tools]\nblock = ['Shout']\npermission = { Echo = 'unrestricted' }\n")
    toolbox = plugin_factory(ECHO)
    assert "Shout" not in toolbox.tools
    assert toolbox.statuses["Shout"].status == f"blocked by [tools] block in {config}"
    assert toolbox.required_level(toolbox.tools["Echo"]) == "unrestricted"
    assert "Echo" not in [t.name for t in toolbox.session("workspace").offered()]
    assert "Shout" not in toolbox.session().catalogue().names()

    plugin_factory.config("[tools]\nallow = ['Shout']\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    assert "Echo" not in toolbox.tools and "Shout" in toolbox.tools
    assert "not listed" in toolbox.statuses["Echo"].status


def test_blocking_a_tool_takes_its_companions(plugin_factory: PluginFactory) -> None:
    plugin_factory.config("[tools]\nblock = ['Main']\n")
    toolbox = plugin_factory('''
from pydantic import BaseModel
from pegboard import Tool, hookimpl
class In(BaseModel):
    pass
async def run(args, ctx):
    return "ok"
@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Main", handler=run, input_model=In))
    register(Tool(name="Companion", handler=run, input_model=In, metadata={"requires": "Main"}))
''')
    assert "Companion" not in toolbox.tools
    assert "goes with Main" in toolbox.statuses["Companion"].status


def test_project_config_can_raise_but_not_lower_a_tools_level(plugin_factory: PluginFactory, isolated_env: Path,
                                                              tmp_path: Path) -> None:
    plugin_factory.config("[tools]\npermission = { Shout = 'read', Echo = 'unrestricted' }\n")
    toolbox = plugin_factory(ECHO)
    assert toolbox.required_level(toolbox.tools["Shout"]) == "workspace"  # its own, not lowered
    assert toolbox.required_level(toolbox.tools["Echo"]) == "unrestricted"
    operator = tmp_path / "operator.toml"
    operator.write_text("[tools]\npermission = { Shout = 'read' }\n")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"], config=operator)
    assert toolbox.required_level(toolbox.tools["Shout"]) == "read"


@pytest.mark.parametrize("mode", ["bypassPermissions", "unrestricted"])
def test_project_config_cannot_switch_prompts_off(tmp_path: Path, isolated_env: Path, mode: str,
                                                  trust_project: Callable[[Path], Path]) -> None:
    trust_project(tmp_path)  # even trusted (an untrusted one gets no wider mode at all: test_trust.py)
    config = tmp_path / ".pegboard" / "config.toml"
    config.parent.mkdir()
    config.write_text(f"[permissions]\nmode = '{mode}'\n")
    with pytest.raises(ConfigError, match=f"{config}: \\[permissions\\] mode = '{mode}'"):
        Toolbox.load(cwd=tmp_path, plugins=[])
    config.write_text("[permissions]\nmode = 'acceptEdits'\n")
    assert Toolbox.load(cwd=tmp_path, plugins=[]).session().mode == "acceptEdits"
    user = isolated_env / "config" / "pegboard" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f"[permissions]\nmode = '{mode}'\n")
    config.unlink()
    assert Toolbox.load(cwd=tmp_path, plugins=[]).session().mode == mode


def _config_models(model: type, seen: set[type]) -> set[type]:
    """``model`` and every model class its fields hold (lists and dicts of them too)."""
    import typing

    from pydantic import BaseModel

    if not (isinstance(model, type) and issubclass(model, BaseModel)) or model in seen:
        return seen
    seen.add(model)
    for info in model.model_fields.values():
        todo = [info.annotation]
        while todo:
            hint = todo.pop()
            todo.extend(typing.get_args(hint))
            _config_models(hint, seen)  # type: ignore[arg-type]
    return seen


def test_config_models_give_empty_lists_as_copied_defaults(tmp_path: Path) -> None:
    """The core's and the built-in plugins' config models (built at every
    start-up) give an empty list as ``[]``, which pydantic copies for each
    model, not as ``default_factory=list``, whose signature pydantic parses
    when it builds the field; and no two loads share one."""
    from pegboard._loading.config import CoreConfig

    first, second = (Toolbox.load(cwd=tmp_path) for _ in range(2))
    models: set[type] = set()
    for record in first.records.values():
        if record.builtin and record.config is not None:
            _config_models(type(record.config), models)
    _config_models(CoreConfig, models)
    assert {"CoreConfig", "PermissionsConfig", "ShellConfig", "ServerConfig"} <= {m.__name__ for m in models}
    factories = [f"{m.__name__}.{name}" for m in models for name, info in m.model_fields.items()
                 if info.default_factory is list]
    assert factories == []
    first.settings.core.permissions.allow.append("Read")
    assert second.settings.core.permissions.allow == [] and first.settings.core.permissions.deny == []
    assert first.records["shell"].config.hidden_paths is not second.records["shell"].config.hidden_paths


def _dist(site: Path, name: str, entry_points: str | None) -> None:
    folder = site / f"{name}-0.1.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    if entry_points is not None:
        (folder / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def _described(eps: Iterable[EntryPoint]) -> list[tuple[str, str, str, str | None]]:
    return sorted((ep.name, ep.value, ep.group, ep.dist.name if ep.dist else None) for ep in eps)


def test_discovery_finds_what_entry_points_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan that parses only files naming the group answers as
    ``entry_points(group="pegboard")``: sections of other groups, a group
    named only in a value or a comment, a distribution shadowed by one of
    the same name earlier on the path, one with no file at all."""
    from importlib.metadata import entry_points

    from pegboard._loading.entry_points import ENTRY_POINT_GROUP, installed_entry_points

    first, second = tmp_path / "first", tmp_path / "second"
    _dist(first, "alpha", "[pegboard]\nalpha = alpha_mod\n[console_scripts]\nalpha = alpha_mod:main\n")
    _dist(first, "beta", "[console_scripts]\nbeta = pegboard_helper:main\n# [pegboard] in a comment\n")
    _dist(first, "gamma", None)
    _dist(first, "Delta_Two", "[ pegboard ]\ndelta = delta_mod:plugin\n")  # not the group, to either
    _dist(second, "alpha", "[pegboard]\nshadowed = shadowed_mod\n")  # the first alpha on the path wins
    _dist(second, "epsilon", "[pegboard.extra]\nother = other_mod\n[pegboard]\neps = eps_mod\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second), *sys.path])
    ours = _described(installed_entry_points())
    assert ours == _described(entry_points(group=ENTRY_POINT_GROUP))
    names = {name for name, *_ in ours}
    assert {"alpha", "eps"} <= names and "shadowed" not in names

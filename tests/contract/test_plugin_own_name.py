"""A built-in plugin installed under another entry-point name reads its
config from ``[plugins.<that name>]`` and keeps its state and files under
that name: no plugin spells its own name (issue 14, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

import pegboard.plugins.shell as shell_plugin
import pegboard.plugins.skills as skills_plugin
from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)
from pegboard import Toolbox

pytestmark = pytest.mark.anyio


def _load(tmp_path: Path, name: str, module: object, body: str) -> Toolbox:
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    cfg = tmp_path / "pegboard.toml"
    cfg.write_text(f"[plugins.{name}]\n{body}\n", encoding="utf-8")
    return Toolbox.load(cwd=root, plugins=[name], extra_plugins={name: module}, config=cfg)


async def test_shell_under_another_name_reads_its_table_and_keeps_its_state(tmp_path: Path) -> None:
    toolbox = _load(tmp_path, "box", shell_plugin, 'sandbox = "off"\nmax_output_chars = 1000')
    assert toolbox.records["box"].error is None
    assert toolbox.tools["Bash"].plugin == "box"
    assert toolbox.plugin_config("box").max_output_chars == 1000  # from [plugins.box]
    session = toolbox.session(mode="bypassPermissions")
    try:
        (toolbox.settings.root / "sub").mkdir()
        moved = await session.call("Bash", {"command": "cd sub"})
        assert not moved.is_error, moved.text_content()
        assert session.plugin_state("box")["cwd"] == (toolbox.settings.root / "sub").resolve()
        assert session.plugin_state("shell") == {}
        long = await session.call("Bash", {"command": "head -c 5000 /dev/zero | tr '\\0' x"})
        spilled = list((session.data_dir / "box").glob("bash-output-*.log"))
        assert len(spilled) == 1 and spilled[0].read_text() == "x" * 5000, long.text_content()
        assert not (session.data_dir / "shell").exists()
    finally:
        await session.aclose()


async def test_skills_under_another_name_reads_its_table_and_keeps_its_state(tmp_path: Path) -> None:
    toolbox = _load(tmp_path, "know", skills_plugin, "listing_budget = 12345")
    assert toolbox.records["know"].error is None
    assert toolbox.tools["Skill"].plugin == "know"
    context = toolbox.context_for("know")
    assert context is not None
    from pegboard.plugins.skills._describe import _config, doctor_checks

    assert _config(context).listing_budget == 12345  # the listing's own read of [plugins.know]
    assert {check.name for check in doctor_checks(None, context)} == {"know"}
    session = toolbox.session()
    closed: list[dict[str, object]] = []
    state = session.plugin_state("know")
    state["marker"] = True
    import pegboard.plugins.skills._activation as activation

    real = activation.deactivate
    activation.deactivate = lambda s: closed.append(s)  # type: ignore[assignment]
    try:
        await session.aclose()
    finally:
        activation.deactivate = real
    assert closed == [state]  # pegboard_session_closed got skills' own state, under its name


def test_a_plugins_commands_learn_its_name(plugin_factory: PluginFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``pegboard_register_commands(cli, context)``: a command finds its own
    plugin in the toolbox it runs with by the name it was given."""
    from click.testing import CliRunner

    from pegboard._cli.main import cli

    plugin_factory.write('''
import click
from pegboard import hookimpl
from pegboard.cli import current_state, global_options

@hookimpl
def pegboard_register_commands(cli, context):
    name = context.name

    @cli.command("whoami")
    @global_options
    def whoami():
        mine = current_state().toolbox().context_for(name)
        click.echo(f"{name} {mine.name}")
''', name="selfnamed")
    monkeypatch.setenv("PEGBOARD_PLUGINS", "selfnamed")
    result = CliRunner().invoke(cli, ["whoami"], catch_exceptions=False)
    assert result.exit_code == 0 and result.output.strip() == "selfnamed selfnamed", result.output


async def test_fs_under_another_name_records_reads_the_shell_reports_under_it(tmp_path: Path) -> None:
    import pegboard.plugins.fs as fs_plugin

    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    toolbox = Toolbox.load(cwd=root, plugins=["files", "shell"], extra_plugins={"files": fs_plugin})
    assert toolbox.tools["Edit"].plugin == "files"
    session = toolbox.session(mode="bypassPermissions")
    try:
        shell = toolbox.context_for("shell")
        assert shell is not None
        # what the shell does for `cat a.txt`: no context given, so fs gets its own
        shell.notify("pegboard_file_read", session=session, path=root / "a.txt", source="Bash")
        assert "reads" in session.plugin_state("files") and session.plugin_state("fs") == {}
        edited = await session.call("Edit", {"file_path": str(root / "a.txt"), "old_string": "hello",
                                             "new_string": "bye"})
        assert not edited.is_error, edited.text_content()
        assert (root / "a.txt").read_text() == "bye\n"
    finally:
        await session.aclose()


async def test_mcp_under_another_name_reads_its_table_and_keeps_its_state(tmp_path: Path) -> None:
    import pegboard.plugins.mcp as mcp_plugin
    from pegboard.plugins.mcp._commands import server_rows
    from pegboard.plugins.mcp._config import own_folder
    from pegboard.plugins.mcp._handlers import loaded_context

    toolbox = _load(tmp_path, "ext", mcp_plugin, '[plugins.ext.servers.demo]\ncommand = "/nonexistent/server"')
    assert toolbox.records["ext"].error is None
    context = loaded_context(toolbox)  # found by its package, under the name it was loaded as
    assert context.name == "ext" and own_folder(context) == context.data_dir / "ext"
    (row,) = server_rows(toolbox, "ext")
    assert row["name"] == "demo" and row["source"] == str(tmp_path / "pegboard.toml")  # [plugins.ext.servers]
    assert toolbox.tools["ListMcpResourcesTool"].plugin == "ext"
    session = toolbox.session(mode="bypassPermissions")
    try:
        await session.call("ListMcpResourcesTool", {})
        assert "pool" in session.plugin_state("ext") and session.plugin_state("mcp") == {}
        # the failed listing at load was recorded in the plugin's own folder
        assert any((own_folder(context) / "tools").iterdir()) and not (context.data_dir / "mcp").exists()
    finally:
        await session.aclose()

"""Typos are caught and the name meant is suggested: `[tools]` lists, tool
names on the command line and in calls, plugin names, config tables and keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pegboard import ConfigError, Toolbox
from pegboard.testing import CLIRunner, PegboardEnv

pytestmark = pytest.mark.anyio


def test_nearest_prefers_case_then_similarity() -> None:
    from pegboard._util.nearest import did_you_mean, nearest

    assert nearest("Notebookedit", ["NotebookEdit", "Edit"]) == "NotebookEdit"
    assert nearest("Reed", ["Read", "Write", "Bash"]) == "Read"
    assert nearest("permisions", ["permissions", "tools"]) == "permissions"
    assert nearest("Zzzqqq", ["Read", "Bash"]) is None
    assert nearest("Read", ["Read"]) is None  # the name itself is no suggestion
    assert did_you_mean("Bsh", ["Bash"]) == "did you mean 'Bash'?" and did_you_mean("x", []) == ""


@pytest.mark.parametrize("key, value", [("block", '["Notebookedit"]'), ("allow", '["Reed", "Bash"]'),
                                        ("permission", '{Bsh = "read"}')])
def test_a_tools_list_naming_no_tool_but_near_one_is_an_error(tmp_path: Path, pegboard_env: PegboardEnv,
                                                              key: str, value: str) -> None:
    config = pegboard_env.user_config(f"[tools]\n{key} = {value}\n")
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=tmp_path, plugins=["fs", "shell"])
    [problem] = caught.value.problems
    assert problem.startswith(f"{config}: [tools] {key}: no tool is called ")
    assert "did you mean 'NotebookEdit'?" in problem or "did you mean 'Read'?" in problem \
        or "did you mean 'Bash'?" in problem
    runner = CLIRunner(tmp_path, installed=["fs", "shell"])
    listed = runner("tools", "list")
    assert listed.exit_code == 2 and "did you mean" in listed.stderr
    doctor = runner("doctor", "--json")
    assert doctor.exit_code == 1
    fails = [c["detail"] for c in json.loads(doctor.stdout)["checks"] if c["status"] == "fail"]
    assert any(f"[tools] {key}: no tool is called" in f and "did you mean" in f for f in fails), fails


@pytest.mark.slow
def test_a_block_naming_nothing_near_is_a_doctor_failure(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    pegboard_env.user_config('[tools]\nblock = ["Zzzqqq"]\n')
    doctor = CLIRunner(tmp_path, installed=["fs"])("doctor", "--json")
    checks = json.loads(doctor.stdout)["checks"]
    assert doctor.exit_code == 1
    assert any(c["status"] == "fail" and "'Zzzqqq' names no known tool, so it blocks nothing" in c["detail"]
               for c in checks)


def test_tool_names_on_the_command_line(tmp_path: Path) -> None:
    runner = CLIRunner(tmp_path, installed=["fs"])
    shown = runner("tools", "show", "read")
    assert shown.exit_code == 4 and "did you mean 'Read'?" in shown.output
    checked = runner("permissions", "check", "Reed")
    assert checked.exit_code == 4 and "Did you mean Read?" in checked.stdout
    called = runner("call", "Reed", "--input", "{}")
    assert called.exit_code == 4 and "Did you mean Read?" in called.stdout


def test_config_tables_keys_and_plugin_names(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    pegboard_env.user_config("[permisions]\nallow = []\n")
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=tmp_path, plugins=[])
    assert caught.value.problems[0].endswith("[permisions]: unknown table; did you mean [permissions]?")
    pegboard_env.config_dir.joinpath("config.toml").write_text('[permissions]\nalow = ["Read"]\n')
    with pytest.raises(ConfigError) as caught:
        Toolbox.load(cwd=tmp_path, plugins=[])
    assert caught.value.problems[0].endswith("[permissions] alow: unknown key; did you mean 'allow'?")
    # a plugin's own table: its config model's keys
    pegboard_env.config_dir.joinpath("config.toml").write_text("[plugins.web]\ntimeout = 3\n[plugins.wbe]\nx = 1\n")
    toolbox = Toolbox.load(cwd=tmp_path)
    assert "[plugins.web] timeout: unknown key; did you mean 'timeout_s'?" in (toolbox.records["web"].error or "")
    assert any(p.endswith("[plugins.wbe]: no installed plugin is called 'wbe'; did you mean 'web'?")
               for p in toolbox.settings.problems)
    checked = CLIRunner(tmp_path, installed=None)("plugins", "check", "wbe")
    assert checked.exit_code == 1 and "did you mean 'web'?" in checked.stdout

"""`pegboard config set` and `pegboard permissions add`: checked before they
are written, refused with why, and the file keeps its comments and layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _trusted import trust

from pegboard.testing import CLIRunner, PegboardEnv

pytestmark = pytest.mark.slow  # each change loads the toolbox twice, as the command does

COMMENTED = """\
# my settings
[permissions]  # rules
# the mode I like
mode = "default"
allow = [
  "Read",  # reading is fine
]
"""


def test_config_set_keeps_comments_and_layout(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    config = pegboard_env.user_config(COMMENTED)
    runner = CLIRunner(tmp_path, installed=["web"])
    result = runner("config", "set", "permissions.mode", "acceptEdits")
    assert result.exit_code == 0, result.output
    assert result.stdout == f'permissions.mode = "acceptEdits" in {config}\n'
    assert runner("config", "set", "plugins.web.timeout_s", "12").exit_code == 0
    assert runner("config", "set", "tools.block", '["WebSearch"]').exit_code == 0
    assert config.read_text() == COMMENTED.replace('mode = "default"', 'mode = "acceptEdits"') + (
        '\n[plugins.web]\ntimeout_s = 12\n\n[tools]\nblock = ["WebSearch"]\n')
    shown = {r["key"]: r for r in json.loads(runner("config", "show", "--json").stdout)}
    assert shown["permissions.mode"]["value"] == "acceptEdits" and shown["tools.block"]["value"] == ["WebSearch"]


@pytest.mark.parametrize("key, value, why", [
    ("permissions.mode", "nonsense", "[permissions] mode: unknown mode or level 'nonsense'"),
    ("permisions.mode", "plan", "[permisions]: unknown table; did you mean [permissions]?"),
    ("plugins.web.timeout", "3", "[plugins.web] timeout: unknown key; did you mean 'timeout_s'?"),
    ("results.max_chars", "10", "[results] max_chars: Input should be greater than or equal to 1000"),
    ("tools.block", '["Webfetch"]', "no tool is called 'Webfetch'; did you mean 'WebFetch'?"),
])
def test_config_set_refuses_what_would_not_load(tmp_path: Path, pegboard_env: PegboardEnv, key: str, value: str,
                                                why: str) -> None:
    config = pegboard_env.user_config(COMMENTED)
    result = CLIRunner(tmp_path, installed=["web"])("config", "set", key, value)
    assert result.exit_code == 1 and why in result.output, result.output
    assert config.read_text() == COMMENTED  # nothing written


def test_config_set_in_a_project_only_when_trusted(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    runner = CLIRunner(tmp_path, installed=["web"])
    refused = runner("config", "set", "permissions.mode", "plan", "--project", "--json")
    assert refused.exit_code == 1 and "is not trusted" in json.loads(refused.stdout)["error"]
    assert not (tmp_path / ".pegboard").exists()
    trust(tmp_path)
    assert runner("config", "set", "permissions.mode", "plan", "--project").exit_code == 0
    assert (tmp_path / ".pegboard" / "config.toml").read_text() == '[permissions]\nmode = "plan"\n'
    # what only the person's own config may set is refused for a project, with why
    scoped = runner("config", "set", "store.url", "sqlite:///x.db", "--project")
    assert scoped.exit_code == 1 and "it chooses where pegboard keeps its state" in scoped.output, scoped.output


def test_permissions_add_parses_the_rule_through_its_plugin_first(tmp_path: Path,
                                                                   pegboard_env: PegboardEnv) -> None:
    config = pegboard_env.user_config(COMMENTED)
    runner = CLIRunner(tmp_path, installed=["web", "fs"])
    bad = runner("permissions", "add", "allow", "WebFetch(domain:https://x)")
    assert bad.exit_code == 1 and "rule 'WebFetch(domain:https://x)' not added: " in bad.output
    assert "bare host name" in bad.output
    unknown = runner("permissions", "add", "deny", "Reed(./secret)")
    assert unknown.exit_code == 1 and "did you mean 'Read'?" in unknown.output
    assert config.read_text() == COMMENTED
    added = runner("permissions", "add", "deny", "Read(./secret/**)", "--json")
    assert added.exit_code == 0 and json.loads(added.stdout)["added"] is True
    again = runner("permissions", "add", "deny", "Read(./secret/**)")
    assert again.stdout.startswith("already there: ")
    assert config.read_text() == COMMENTED + 'deny = ["Read(./secret/**)"]\n'
    checked = runner("permissions", "check", "Read", "--input", json.dumps({"file_path": str(tmp_path / "secret/a")}))
    assert checked.exit_code == 1 and checked.stdout.startswith("deny:")

"""``pegboard permissions check`` and ``list``: in-process with click's
runner, and through the installed ``pegboard`` script in a real process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from test_permissions_plugin import PLUGIN_NAME, Project, project  # noqa: F401  (fixture)

from pegboard._cli.main import cli
from pegboard._loading.config import config_dir


@pytest.fixture(autouse=True)
def only_the_test_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PEGBOARD_PLUGINS", PLUGIN_NAME)


def run(project: Project, *args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(cli, [*args, "--cwd", str(project.root)], input=input)
    return result


def test_check_prints_decision_reason_and_source(project: Project) -> None:
    project.project_config('[permissions]\ndeny = ["Bash(git push:*)"]\n')
    result = run(project, "permissions", "check", "Bash", "--input", '{"command": "git push origin"}')
    assert result.exit_code == 1, result.output  # deny
    lines = result.output.splitlines()
    assert lines[0] == "deny: denied by Bash(git push:*)"
    assert lines[1] == f"source: rule Bash(git push:*) in {project.root / '.pegboard' / 'config.toml'}"


def test_check_json_has_exactly_decision_reason_source(project: Project) -> None:
    result = run(project, "permissions", "check", "WebFetch", "--input", '{"url": "https://example.com"}',
                 "--json")
    assert result.exit_code == 3, result.output  # ask
    data = json.loads(result.output)
    assert set(data) == {"decision", "reason", "source"}
    assert data["decision"] == "ask" and data["source"] == f"plugin {PLUGIN_NAME}"


@pytest.mark.parametrize("mode, want", [
    ("default", "ask"), ("acceptEdits", "allow"), ("dontAsk", "deny"), ("plan", "deny"),
    ("workspace", "allow"), ("read", "deny"), ("ask", "ask"), ("unrestricted", "allow"),
])
def test_mode_takes_both_vocabularies(project: Project, mode: str, want: str) -> None:
    args = json.dumps({"file_path": str(project.root / "a.txt"), "content": "x"})
    result = run(project, "permissions", "check", "Write", "--input", args, "--mode", mode, "--json")
    assert result.exit_code == {"allow": 0, "deny": 1, "ask": 3}[want], result.output
    assert json.loads(result.output)["decision"] == want


def test_check_refuses_unknown_modes_and_bad_input(project: Project) -> None:
    assert run(project, "permissions", "check", "Read", "--mode", "yolo").exit_code == 2
    assert run(project, "permissions", "check", "Read", "--input", "{nope").exit_code == 2
    assert run(project, "permissions", "check").exit_code == 2
    unknown = run(project, "permissions", "check", "Nope", "--json")
    assert json.loads(unknown.output)["decision"] == "deny"
    invalid = json.loads(run(project, "permissions", "check", "Read", "--input", '{"file_path": 3}', "--json").output)
    assert invalid["decision"] == "deny" and invalid["source"] == "validation"


def test_check_reports_config_errors_with_file_and_rule(project: Project) -> None:
    path = project.project_config('[permissions]\nallow = ["Bash(git log:*", "Read"]\n')
    result = run(project, "permissions", "check", "Read")
    assert result.exit_code == 2
    assert str(path) in result.output and "'Bash(git log:*'" in result.output


def test_bypass_disabled_by_the_policy_is_refused(project: Project) -> None:
    project.policy("[permissions]\ndisable_bypass_permissions = true\n")
    result = run(project, "permissions", "check", "Read", "--mode", "bypassPermissions")
    assert result.exit_code == 2 and "disable_bypass_permissions" in result.output


def test_batch_answers_line_for_line_in_order(project: Project) -> None:
    project.project_config('[permissions]\nallow = ["Bash(make:*)"]\n')
    requests = [
        {"tool": "Bash", "input": {"command": "make all"}},
        {"tool": "Bash", "input": {"command": "curl x"}, "mode": "dontAsk"},
        "not json",
        {"tool": "Read", "input": {"file_path": str(project.root / "a")}, "mode": "ask"},
        {"input": {}},
        {"tool": "Read", "input": {"file_path": str(project.root / "a")}, "mode": "bogus"},
        {"tool": "Write", "input": {"file_path": str(project.root / "a")}, "mode": "workspace"},
        {"tool": "Write", "input": {"file_path": str(project.root / "a")}},
        {"tool": "Read", "input": []},
    ]
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in requests) + "\n\n"
    result = run(project, "permissions", "check", "--batch", "-", input=text)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.output.splitlines()]
    assert [o["decision"] for o in out] == ["allow", "deny", "deny", "ask", "deny", "deny", "allow", "ask", "deny"]
    assert out[2]["source"] == "input" and "line 3" in out[2]["reason"]
    assert 'missing "tool"' in out[4]["reason"] and "bogus" in out[5]["reason"]
    assert all(set(o) == {"decision", "reason", "source"} for o in out)
    # --mode is the default for lines without one.
    result = run(project, "permissions", "check", "--batch", "-", "--mode", "acceptEdits", input=text)
    assert [json.loads(line)["decision"] for line in result.output.splitlines()][7] == "allow"


def test_list_shows_every_rule_with_layer_and_file(project: Project) -> None:
    user = project.user_config('[permissions]\nallow = ["Read"]\n')
    proj = project.project_config('[permissions]\ndeny = ["Bash(rm:*)"]\nask = ["Nobody(x)"]\n'
                                  'protected_paths = ["secrets/**"]\n')
    policy = project.policy('[permissions]\ndeny = ["WebFetch"]\n')
    result = run(project, "permissions", "list", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = {r["rule"]: r for r in data["rules"]}
    assert (rows["Read"]["behavior"], rows["Read"]["layer"], rows["Read"]["file"]) == ("allow", "user", str(user))
    assert (rows["Bash(rm:*)"]["layer"], rows["Bash(rm:*)"]["file"]) == ("project", str(proj))
    assert (rows["WebFetch"]["layer"], rows["WebFetch"]["file"]) == ("policy", str(policy))
    assert rows["Nobody(x)"]["active"] is False
    assert "secrets/**" in data["protected_paths"] and ".git" in data["protected_paths"]
    text = run(project, "permissions", "list").output
    assert f"deny   Bash(rm:*)" in text and str(proj) in text and "inactive" in text


# --- a real process ---------------------------------------------------------------


def _pegboard() -> str:
    # The venv's own script first: PATH may not include the venv's bin.
    path = shutil.which("pegboard", path=os.path.dirname(sys.executable)) or shutil.which("pegboard")
    assert path, "the pegboard script is not installed in this environment"
    return path


@pytest.mark.slow
def test_batch_of_ten_thousand_lines_in_one_process(project: Project) -> None:
    """Through the installed script, stdin to stdout: 10,000 requests, each
    answered in order (every even line's reason carries its index)."""
    project.project_config('[permissions]\ndeny = ["Bash(cmd13:*)"]\n')
    (project.root / "a.txt").write_text("x")
    lines = []
    for i in range(10_000):
        if i % 2 == 0:
            lines.append(json.dumps({"tool": "Bash", "input": {"command": f"cmd{i} --flag"}}))
        else:
            lines.append(json.dumps({"tool": "Read", "input": {"file_path": "a.txt"}, "mode": "plan"}))
    env = {**os.environ, "PYTHONPATH": str(project.site), "PEGBOARD_PLUGINS": PLUGIN_NAME}
    proc = subprocess.run([_pegboard(), "permissions", "check", "--batch", "-", "--cwd", str(project.root)],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(out) == 10_000
    for i, o in enumerate(out):
        if i % 2:
            assert o["decision"] == "allow", (i, o)
        else:
            assert o["decision"] == "ask" and f"cmd{i} " in o["reason"], (i, o)
    # A deny rule in the project config reaches the batch too.
    proc = subprocess.run([_pegboard(), "permissions", "check", "Bash", "--input", '{"command": "cmd13 x"}',
                           "--json", "--cwd", str(project.root)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert json.loads(proc.stdout)["decision"] == "deny", proc.stderr


def test_user_grants_file_is_read_by_a_new_process(project: Project) -> None:
    granted = config_dir() / "granted.toml"
    granted.parent.mkdir(parents=True, exist_ok=True)
    granted.write_text('[permissions]\nallow = ["Bash(cargo:*)"]\n')
    env = {**os.environ, "PYTHONPATH": str(project.site), "PEGBOARD_PLUGINS": PLUGIN_NAME}
    proc = subprocess.run([_pegboard(), "permissions", "check", "Bash", "--input", '{"command": "cargo test"}',
                           "--json", "--cwd", str(project.root)], capture_output=True, text=True, env=env,
                          timeout=120)
    data = json.loads(proc.stdout)
    assert data["decision"] == "allow" and str(granted) in data["source"], proc.stderr

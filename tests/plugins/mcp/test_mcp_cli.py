"""``pegboard mcp list|approve|refresh`` and ``pegboard tools list`` with MCP
servers, through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mcp_servers.helpers import KITCHEN_SINK
import pytest

PEGBOARD = Path(sys.executable).parent / "pegboard"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PEGBOARD), "--cwd", str(cwd), *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_import_does_not_import_mcp() -> None:
    code = "import sys, pegboard.plugins.mcp, pegboard.plugins.mcp._handlers; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow
def test_project_server_approval_flow(tmp_path: Path, trust_project: Callable[[Path], Path]) -> None:
    trust_project(tmp_path)  # an untrusted folder's .mcp.json is not even listed (test_trust.py)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": sys.executable, "args": [str(KITCHEN_SINK)]}}}))
    listed = run("mcp", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["name"] == "proj" and row["state"] == "needs approval" and row["project_defined"]
    assert row["source"].endswith(".mcp.json")

    tools = run("tools", "list", "--json", cwd=tmp_path)
    names = {r["name"] for r in json.loads(tools.stdout)}
    assert not any(n.startswith("mcp__proj__") for n in names)
    assert "ListMcpResourcesTool" in names

    approved = run("mcp", "approve", "proj", cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    assert "approved proj" in approved.stdout and "proj: 12 tools" in approved.stdout

    (row,) = json.loads(run("mcp", "list", "--json", cwd=tmp_path).stdout)
    assert row["state"] == "ready" and "echo" in row["tools"]
    # The tool list comes from the cache: no server is started to list tools.
    tools = run("tools", "list", "--json", cwd=tmp_path)
    rows = {r["name"]: r for r in json.loads(tools.stdout)}
    assert rows["mcp__proj__echo"]["loading"] == "deferred" and not rows["mcp__proj__echo"]["read_only"]
    human = run("mcp", "list", cwd=tmp_path).stdout
    assert "proj" in human and "ready" in human and ".mcp.json" in human


@pytest.mark.slow
def test_user_config_server_needs_no_approval(tmp_path: Path) -> None:
    config = tmp_path / "extra.toml"
    config.write_text(f'[plugins.mcp.servers.mine]\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(KITCHEN_SINK))}]\n')
    (row,) = json.loads(run("--config", str(config), "mcp", "list", "--json", cwd=tmp_path).stdout)
    assert row["state"].startswith("approved, tools not listed yet") and not row["project_defined"]
    refreshed = run("--config", str(config), "mcp", "refresh", cwd=tmp_path)
    assert "mine: 12 tools" in refreshed.stdout, refreshed.stderr


@pytest.mark.slow
def test_a_new_server_is_callable_with_no_refresh_step(tmp_path: Path) -> None:
    config = tmp_path / "extra.toml"
    config.write_text(f'[plugins.mcp.servers.mine]\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(KITCHEN_SINK))}]\n[permissions]\nallow = ["mcp__mine"]\n')
    listed = run("--config", str(config), "tools", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "mcp__mine__" not in listed.stdout  # quick: nothing started
    assert "'mine': tools not listed yet" in listed.stderr
    called = run("--config", str(config), "call", "mcp__mine__echo", "--input", '{"text": "first try"}', cwd=tmp_path)
    assert called.returncode == 0 and called.stdout.strip() == "first try", called.stderr
    listed = run("--config", str(config), "tools", "list", cwd=tmp_path)
    assert "mcp__mine__echo" in listed.stdout and "not listed yet" not in listed.stderr


@pytest.mark.slow
def test_refresh_fails_when_a_server_fails(tmp_path: Path) -> None:
    config = tmp_path / "extra.toml"
    config.write_text('[plugins.mcp.servers.ghost]\ncommand = "/no/such/program"\n')
    out = run("--config", str(config), "mcp", "refresh", "ghost", cwd=tmp_path)
    assert out.returncode == 1 and "ghost: failed" in out.stdout


@pytest.mark.slow
def test_approve_unknown_server_fails(tmp_path: Path) -> None:
    out = run("mcp", "approve", "ghost", cwd=tmp_path)
    assert out.returncode != 0 and "ghost" in out.stderr


@pytest.mark.slow
def test_doctor_reports_each_server(tmp_path: Path) -> None:
    config = tmp_path / "extra.toml"
    config.write_text(f'[plugins.mcp.servers.mine]\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = [{json.dumps(str(KITCHEN_SINK))}]\n'
                      '[plugins.mcp.servers.ghost]\ncommand = "/no/such/program"\n')
    out = run("--config", str(config), "doctor", cwd=tmp_path)
    text = out.stdout + out.stderr
    assert "mcp server mine" in text and "pegboard mcp refresh mine" in text
    assert "mcp server ghost" in text and "not found" in text

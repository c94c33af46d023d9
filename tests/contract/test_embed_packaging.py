"""pegboard installs beside a framework that pins mcp<2 (the MCP SDK is the
``mcp`` extra), works there without MCP, and says how to get the SDK where
MCP needs it. A real wheel in a fresh virtual environment, installed by uv."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
UV = shutil.which("uv")

pytestmark = pytest.mark.skipif(UV is None, reason="uv builds and installs the wheel")


@pytest.mark.slow
def test_installs_beside_mcp_below_2_and_says_how_to_get_the_sdk(tmp_path: Path) -> None:
    assert UV is not None
    dist = tmp_path / "dist"
    subprocess.run([UV, "build", "--wheel", "--out-dir", str(dist), str(ROOT)], check=True, capture_output=True)
    wheel = next(dist.glob("pegboard-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--python", sys.executable, str(venv)], check=True, capture_output=True)
    python = str(venv / "bin" / "python")
    # langchain-mcp-adapters pins mcp<2: with mcp a hard dependency of pegboard this could not resolve.
    installed = subprocess.run([UV, "pip", "install", "--python", python, f"{wheel}[langchain]",
                                "langchain-mcp-adapters"], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert int(version.split(".")[0]) < 2, version

    env = {k: v for k, v in os.environ.items() if k != "PEGBOARD_PLUGINS"}
    pegboard = str(venv / "bin" / "pegboard")
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    listed = subprocess.run([pegboard, "tools", "list", "--json", "--cwd", str(project)], capture_output=True,
                            text=True, env=env)
    assert listed.returncode == 0, listed.stderr
    assert {"Read", "Bash"} <= {row["name"] for row in json.loads(listed.stdout)}
    called = subprocess.run([pegboard, "call", "Read", "--cwd", str(project), "--input",
                             json.dumps({"file_path": str(project / "a.txt")})], capture_output=True, text=True,
                            env=env)
    assert called.returncode == 0 and "alpha" in called.stdout, called.stderr
    doctor = subprocess.run([pegboard, "doctor", "--json", "--cwd", str(project)], capture_output=True, text=True,
                            env=env)
    sdk = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "mcp: mcp sdk")
    assert sdk["status"] == "warn" and "pegboard[mcp]" in sdk["detail"] and version in sdk["detail"]
    served = subprocess.run([pegboard, "serve", "--cwd", str(project)], capture_output=True, text=True, env=env,
                            stdin=subprocess.DEVNULL, timeout=120)
    assert served.returncode != 0 and "pegboard[mcp]" in served.stderr
    # With a server configured, the missing SDK is a failure that names the servers.
    (project / ".pegboard").mkdir()
    (project / ".pegboard" / "config.toml").write_text('[plugins.mcp.servers.files]\ncommand = "some-server"\n')
    subprocess.run([pegboard, "trust", str(project)], capture_output=True, env=env, check=True)
    doctor = subprocess.run([pegboard, "doctor", "--cwd", str(project)], capture_output=True, text=True, env=env)
    assert doctor.returncode == 1 and "MCP servers files are configured, but mcp" in doctor.stdout
    # The adapters work there: the LangChain one imports and offers the tools.
    adapter = subprocess.run([python, "-c", (
        "from pegboard import Toolbox\nfrom pegboard.integrations.langchain import tools\n"
        f"print(sorted(t.name for t in tools(Toolbox.load(cwd={str(project)!r}).session()))[:3])")],
        capture_output=True, text=True, env=env)
    assert adapter.returncode == 0 and "Bash" in adapter.stdout, adapter.stderr

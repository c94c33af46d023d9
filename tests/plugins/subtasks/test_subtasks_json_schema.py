"""``pegboard agent run --json-schema FILE``: the sub-agent is offered
StructuredOutput with that schema, and the command prints its validated
answer as JSON; against the local model servers (tests/_model_servers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _model_servers import ModelServer, model_server, say, use
from _subtasks_host import project
from pegboard.paths import config_dir

PEGBOARD = str(Path(sys.executable).parent / "pegboard")
SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}, "score": {"type": "integer"}},
          "required": ["verdict", "score"]}

pytestmark = pytest.mark.slow


def configure(server: ModelServer) -> dict[str, str]:
    path = config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[plugins.subtasks]\nrunner = "{server.api}"\nmodel = "test-model"\nbase_url = "{server.url}"\n'
                    "backoff_s = 0.01\n", encoding="utf-8")
    return {**os.environ, "PEGBOARD_PLUGINS": "fs,subtasks,structured_output", "ANTHROPIC_API_KEY": "test-key",
            "OPENAI_API_KEY": "test-key"}


def agent_run(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, "--cwd", str(root), "agent", "run", "--mode", "acceptEdits", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_answer_is_validated_and_printed_as_json(api: str, tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    steps = [use(("StructuredOutput", {"verdict": "maybe"})),
             use(("StructuredOutput", {"verdict": "pass", "score": 7})), say("Done.")]
    with model_server(api, steps) as server:
        done = agent_run(root, configure(server), "--agent", "Explore", "--json-schema", str(root / "schema.json"),
                         "Judge the project.")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {"verdict": "pass", "score": 7}
    assert server.problems == []
    first = server.requests[0]
    tools = {(t["name"] if api == "anthropic" else t["function"]["name"]):
             (t["input_schema"] if api == "anthropic" else t["function"]["parameters"]) for t in first["tools"]}
    assert tools["StructuredOutput"]["required"] == ["verdict", "score"]  # the file's schema, to Explore too
    refused = json.dumps(server.requests[1]["messages"])
    assert "does not match the required schema" in refused and "score" in refused


def test_no_answer_is_an_error(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    with model_server("anthropic", [say("I would rather not.")]) as server:
        done = agent_run(root, configure(server), "--json-schema", str(root / "schema.json"), "Judge it.")
    assert done.returncode == 1 and done.stdout == ""
    assert "gave no structured answer" in done.stderr and "I would rather not." in done.stderr


@pytest.mark.parametrize(("content", "why"), [("{not json", "is not JSON"),
                                              ('{"type": "array"}', "must describe an object"),
                                              ('{"type": "object", "required": 3}', "not a valid JSON Schema")])
def test_a_bad_schema_file_is_named(content: str, why: str, tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "bad.json").write_text(content)
    with model_server("anthropic", []) as server:
        done = agent_run(root, configure(server), "--json-schema", str(root / "bad.json"), "Judge it.")
    assert done.returncode == 2 and str(root / "bad.json") in done.stderr and why in done.stderr
    assert server.requests == []

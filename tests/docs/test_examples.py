"""Every example in examples/ runs, as its reader would run it, against a
local server that speaks its model API's exact wire format
(tests/_model_servers.py): the real SDK, pointed there by its own base-URL
environment variable. Each model is scripted to ask for a Read, then a
parallel pair (an image and a Grep), then a Write that needs approval (given
at the example's prompt), then to answer; the test checks what came back
to the model each turn. docs/embedding.md shows each example's code as it
is here."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _model_servers import ModelServer, model_server, say, use

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs" / "embedding.md"

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text("alpha\nbeta\n")
    (root / "dot.png").write_bytes(PNG)
    return root


def script(project: Path, prefix: str = "") -> list[Any]:
    return [
        use((f"{prefix}Read", {"file_path": str(project / "notes.md")}), text="Let me read the notes."),
        use((f"{prefix}Read", {"file_path": str(project / "dot.png")}),
            (f"{prefix}Grep", {"pattern": "beta", "path": str(project)})),
        use((f"{prefix}Write", {"file_path": str(project / "summary.md"), "content": "alpha, beta\n"})),
        say("All done: summary.md has the summary."),
    ]


def run_example(name: str, server: ModelServer, cwd: Path, *, stdin: str = "",
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # None of the machine's model-API or Claude Code settings: only the local server's.
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "AWS_", "GOOGLE_"))}
    environ |= {"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url,
                "OPENAI_BASE_URL": server.url, "MODEL": "test-model", **(env or {})}
    done = subprocess.run([sys.executable, str(EXAMPLES / name), "Summarise notes.md into summary.md"],
                          cwd=cwd, env=environ, input=stdin, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


# --- what the model was sent back, per API -------------------------------------------------

def anthropic_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    last = request["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def anthropic_text(block: dict[str, Any]) -> str:
    content = block.get("content", [])
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def anthropic_has_image(block: dict[str, Any]) -> bool:
    content = block.get("content", [])
    return isinstance(content, list) and any(b.get("type") == "image" for b in content)


LOOPS = {
    "anthropic_messages.py": "anthropic",
    "openai_chat.py": "openai",
    "openai_responses.py": "responses",
}


def turns(api: str, request: dict[str, Any]) -> list[tuple[str, bool]]:
    """The tool results at the end of a request: (text, carries an image), in order."""
    if api == "anthropic":
        return [(anthropic_text(b), anthropic_has_image(b)) for b in anthropic_results(request)]
    if api == "openai":
        messages = request["messages"]
        tail: list[dict[str, Any]] = []
        for message in reversed(messages):
            if message["role"] == "assistant":
                break
            tail.insert(0, message)
        images = any(isinstance(m["content"], list) and any(p.get("type") == "image_url" for p in m["content"])
                     for m in tail if m["role"] == "user")
        tools = [m for m in tail if m["role"] == "tool"]
        return [(m["content"], images and "follow in the next message" in m["content"]) for m in tools]
    items = request["input"]
    out = []
    for item in items:
        if item.get("type") == "function_call_output":
            output = item["output"]
            if isinstance(output, str):
                out.append((output, False))
            else:
                out.append(("\n".join(p.get("text", "") for p in output if p["type"] == "input_text"),
                            any(p["type"] == "input_image" for p in output)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(LOOPS))
def test_the_loop_examples_run_against_their_api(example: str, project: Path) -> None:
    api = LOOPS[example]
    with model_server(api, script(project)) as server:
        done = run_example(example, server, project, stdin="y\n")
    assert server.problems == [], server.problems
    assert "All done" in done.stdout
    assert "Allow Write?" in done.stdout  # the approval was put to the person
    assert (project / "summary.md").read_text() == "alpha, beta\n"
    assert len(server.requests) == 4
    first = server.requests[0]
    assert first.get("model") == "test-model" and first["tools"]
    read = turns(api, server.requests[1])
    assert "alpha" in read[-1][0] and not read[-1][1]
    pair = turns(api, server.requests[2])[-2:]
    assert pair[0][1] is True, pair  # the image reached the model as an image
    assert "notes.md" in pair[1][0]  # the Grep's answer, second, in call order
    wrote = turns(api, server.requests[3])[-1]
    assert "summary.md" in wrote[0] and "denied" not in wrote[0].lower()


@pytest.mark.slow
def test_a_refused_approval_reaches_the_model(project: Path) -> None:
    with model_server("anthropic", script(project)) as server:
        run_example("anthropic_messages.py", server, project, stdin="n\n")
    assert server.problems == []
    assert not (project / "summary.md").exists()
    assert "The user said no." in turns("anthropic", server.requests[3])[-1][0]


# --- the frameworks ------------------------------------------------------------------------

FRAMEWORKS = {
    # example: (its model API, the tool names' prefix, environment for the run)
    "pydantic_ai_agent.py": ("anthropic", "", {}),
    "openai_agents_sdk.py": ("responses", "", {"OPENAI_AGENTS_DISABLE_TRACING": "1"}),  # no trace export
    "langchain_agent.py": ("anthropic", "", {}),
    # The real Claude Code CLI the SDK ships, on its own home folder, sending nothing but model requests;
    # MCP tools offered up front rather than through the CLI's tool search, so the script is the same.
    "claude_agent_sdk_agent.py": ("anthropic", "mcp__pegboard__", {
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_AUTOUPDATER": "1"}),
}

IMAGE_PART = {"anthropic": '"type": "image"', "responses": '"type": "input_image"'}


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(FRAMEWORKS))
def test_the_framework_examples_run_against_their_api(example: str, project: Path, tmp_path: Path) -> None:
    pytest.importorskip({"pydantic_ai_agent.py": "pydantic_ai", "openai_agents_sdk.py": "agents",
                         "langchain_agent.py": "langchain_anthropic",
                         "claude_agent_sdk_agent.py": "claude_agent_sdk"}[example])
    api, prefix, env = FRAMEWORKS[example]
    home = tmp_path / "home"
    home.mkdir()
    with model_server(api, script(project, prefix)) as server:
        done = run_example(example, server, project, stdin="y\n", env={**env, "HOME": str(home)})
    assert server.problems == [], server.problems
    assert "All done" in done.stdout, done.stdout + done.stderr
    assert re.search(r"Allow .*Write", done.stdout), done.stdout  # the approval was put to the person
    assert (project / "summary.md").read_text() == "alpha, beta\n"
    model_requests = [r for r in server.requests if r.get("tools")]
    assert len(model_requests) >= 4, [list(r) for r in server.requests]
    sent = [json.dumps(r) for r in model_requests]
    names = {(t.get("name") or t.get("function", {}).get("name")) for t in model_requests[0]["tools"]}
    assert {f"{prefix}Read", f"{prefix}Write", f"{prefix}Grep"} <= names, sorted(map(str, names))
    [read] = turns(api, model_requests[1])[-1:]
    assert "alpha" in read[0] and not read[1]
    image, grep = turns(api, model_requests[2])[-2:]
    assert image[1] is True, image  # the image reached the model as an image
    assert "notes.md" in grep[0] and "Found" in grep[0], grep  # the Grep's answer, second, in call order
    if example == "langchain_agent.py":  # the call waited; its result came after the person's answer
        assert "pending call" in turns(api, model_requests[3])[-1][0]
        assert re.search(r"Pending call p-\w+ \(Write\): .*summary\.md", sent[3])
    else:
        assert "summary.md" in turns(api, model_requests[3])[-1][0]
    assert "The user said no." not in sent[3]


# --- the docs show the examples --------------------------------------------------------------

def _code(example: Path) -> str:
    """The example's code as docs/embedding.md shows it: the file less its opening docstring."""
    import ast

    source = example.read_text()
    docstring = ast.parse(source).body[0]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant), example.name
    return "\n".join(source.splitlines()[docstring.end_lineno:]).strip()


def test_every_example_is_run_here_and_shown_in_the_docs() -> None:
    # embed_batch.py: tests/docs/test_pipeline_example.py; conversation_agent.py: tests/plugins/conversation/test_conversation_resume.py
    examples = {p.name for p in EXAMPLES.glob("*.py")} - {"embed_batch.py", "conversation_agent.py"}
    assert examples == set(LOOPS) | set(FRAMEWORKS)
    docs = DOCS.read_text()
    for name in sorted(examples):
        assert f"```python\n{_code(EXAMPLES / name)}\n```" in docs, f"docs/embedding.md does not show {name} as it is"
        assert f"`examples/{name}`" in docs

"""Real sub-agents through both reference runners, against local servers that
speak the Anthropic Messages API and OpenAI Chat Completions exactly
(tests/_model_servers.py): tool calls, results with text, images and errors,
429 with retry-after, 500, a malformed reply, max_turns, stopping, and a
follow-up from a second process under the spawn's terms."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _model_servers import ModelServer, garbage, model_server, say, status, use
from _subtasks_host import load, project
from pegboard import Session, hookimpl
from pegboard.paths import config_dir

pytestmark = pytest.mark.anyio

APIS = ("anthropic", "openai")
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PEGBOARD = str(Path(sys.executable).parent / "pegboard")


def configure(server: ModelServer, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> None:
    path = config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    backoff = "" if "backoff_s" in extra else "backoff_s = 0.01\n"
    path.write_text(f'[plugins.subtasks]\nrunner = "{server.api}"\nmodel = "test-model"\nbase_url = "{server.url}"\n'
                    f"{backoff}{extra}", encoding="utf-8")
    monkeypatch.setenv("ANTHROPIC_API_KEY" if server.api == "anthropic" else "OPENAI_API_KEY", "test-key")


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = project(tmp_path)
    (folder / "notes.md").write_text("alpha\nbeta\n")
    (folder / "dot.png").write_bytes(PNG)
    return folder


async def run_agent(session: Session, prompt: str, **extra: Any) -> str:
    result = await session.call("Agent", {"description": "look", "prompt": prompt, "run_in_background": False,
                                          **extra})
    return result.text_content()


def tool_results(server: ModelServer, index: int) -> list[dict[str, Any]]:
    """The tool results the runner sent in request ``index``, as the API carries them."""
    messages = server.requests[index]["messages"]
    if server.api == "anthropic":
        return [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return [m for m in messages[last:] if m["role"] == "tool"]


def result_text(server: ModelServer, entry: dict[str, Any]) -> str:
    if server.api == "anthropic":
        return "\n".join(b.get("text", "") for b in entry.get("content", []) if b["type"] == "text")
    return str(entry["content"])


@pytest.mark.slow
async def test_a_sub_agent_runs_on_the_reference_runner(api: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes, image = str(root / "notes.md"), str(root / "dot.png")
    steps = [use(("Read", {"file_path": notes}), ("Read", {"file_path": image}), text="Reading both."),
             use(("Write", {"file_path": str(root / "x.txt"), "content": "no"}), ("Nope", {})),
             say("Found alpha and beta, and a one-pixel image.")]
    with model_server(api, steps) as server:
        configure(server, monkeypatch)
        text = await run_agent(load(root).session("default"), "Summarise the notes.", subagent_type="Explore")
    assert server.problems == []
    assert text.splitlines()[1] == "Found alpha and beta, and a one-pixel image."
    first = server.requests[0]
    names = {t["name"] if api == "anthropic" else t["function"]["name"] for t in first["tools"]}
    assert {"Read", "Glob", "Grep"} <= names and "Write" not in names  # Explore's catalogue
    system = first["system"] if api == "anthropic" else first["messages"][0]["content"]
    assert "read-only search specialist" in system and "# Where you are" in system
    assert first["model"] == "test-model"
    # Text and an image came back in the API's own format.
    read_back = tool_results(server, 1)
    assert "1\talpha" in result_text(server, read_back[0])
    if api == "anthropic":
        assert read_back[1]["content"][0]["type"] == "image" and read_back[1]["is_error"] is False
    else:
        images = [m for m in server.requests[1]["messages"] if m["role"] == "user" and isinstance(m["content"], list)]
        assert images and images[-1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    # Errors too: a refused Write and an unknown tool, and the file is untouched.
    errors = tool_results(server, 2)
    assert "Write is not offered to this sub-agent" in result_text(server, errors[0])
    assert "There is no tool called 'Nope'" in result_text(server, errors[1])
    if api == "anthropic":
        assert errors[0]["is_error"] is True and errors[1]["is_error"] is True
    assert not (root / "x.txt").exists()


@pytest.mark.slow
async def test_read_only_calls_of_one_reply_run_side_by_side(api: str, root: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    met: list[bool] = []
    both = threading.Event()

    class Gate:
        @hookimpl
        async def pegboard_before_call(self, call: Any) -> None:
            if call.tool.name not in ("Glob", "Grep"):
                return
            started.append(call.tool.name)
            if len(started) == 2:
                both.set()
            # the first waits for the second: if they ran one after another, its wait runs out (False)
            met.append(await asyncio.wait_for(asyncio.to_thread(both.wait, 5), 6))

    steps = [use(("Glob", {"pattern": "*.md"}), ("Grep", {"pattern": "beta"})), say("done")]
    with model_server(api, steps) as server:
        configure(server, monkeypatch)
        text = await run_agent(load(root, Gate()).session("default"), "search")
    assert server.problems == [] and text.endswith("done") and sorted(started) == ["Glob", "Grep"]
    assert met == [True, True]  # each saw the other start while it was running


@pytest.mark.slow
@pytest.mark.parametrize("trouble", ["429", "500", "529", "malformed"])
async def test_transient_trouble_is_retried(api: str, trouble: str, root: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = {"429": status(429, retry_after="0"), "500": status(500), "529": status(529),
             "malformed": garbage()}[trouble]
    with model_server(api, [first, say("fine now")]) as server:
        configure(server, monkeypatch)
        text = await run_agent(load(root).session("default"), "go")
    assert text.endswith("fine now") and len(server.requests) == 2 and server.problems == []


@pytest.mark.slow
async def test_retry_after_is_waited_for(api: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with model_server(api, [status(429, retry_after="1"), say("waited")]) as server:
        configure(server, monkeypatch, "backoff_s = 0\n")
        waits: list[float] = []
        real_sleep = asyncio.sleep

        async def recorded_sleep(delay: float, *args: Any) -> Any:
            waits.append(delay)
            return await real_sleep(0)

        monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
        text = await run_agent(load(root).session("default"), "go")
    # the wait the runner asked for, not the clock: Retry-After: 1 beat the zero backoff
    assert text.endswith("waited") and 1 in waits


@pytest.mark.slow
async def test_lasting_trouble_ends_the_run_with_the_reason(api: str, root: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with model_server(api, [status(500, message="kaput")] * 3) as server:
        configure(server, monkeypatch, "retries = 2\n")
        session = load(root).session("default")
        result = await session.call("Agent", {"description": "x", "prompt": "go", "run_in_background": False})
    assert result.is_error and len(server.requests) == 3
    assert "answered 500: kaput" in result.text_content() and "after 3 attempts" in result.text_content()
    assert "\tfailed\t" in (await session.call("ListAgents", {})).text_content()
    with model_server(api, [status(400, message="bad model name")]) as server:
        configure(server, monkeypatch)
        text = await run_agent(load(root).session("default"), "go")
    assert len(server.requests) == 1 and "refused the request (400): bad model name" in text
    with model_server(api, [garbage()] * 2) as server:
        configure(server, monkeypatch, "retries = 1\n")
        text = await run_agent(load(root).session("default"), "go")
    assert "reply could not be read" in text


@pytest.mark.slow
async def test_max_turns_stops_the_run(api: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    again = use(("Glob", {"pattern": "*"}), text="Still looking.")
    with model_server(api, [again] * 5) as server:
        configure(server, monkeypatch, "max_turns = 3\n")
        text = await run_agent(load(root).session("default"), "go on forever")
    assert len(server.requests) == 3
    assert "Still looking." in text and "It stopped after 3 model turns (its max_turns)" in text


@pytest.mark.slow
async def test_a_background_child_is_stopped_mid_request(api: str, root: Path, monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    class Listener:
        @hookimpl
        def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
            events.append((kind, data))

    with model_server(api, [say("never seen")]) as server:
        server.gate = threading.Event()
        configure(server, monkeypatch)
        session = load(root, Listener()).session("default")
        started = (await session.call("Agent", {"description": "bg", "prompt": "take long"})).text_content()
        task_id = started.split(" as ")[1].split(".")[0]
        assert await asyncio.to_thread(server.waiting.wait, 10)
        stopped = await session.call("TaskStop", {"task_id": task_id})
        assert not stopped.is_error
    assert [d["status"] for k, d in events if k == "background.done"] == ["stopped"]
    assert "\tstopped\t" in (await session.call("ListAgents", {})).text_content()


@pytest.mark.slow
async def test_openai_arguments_that_are_not_json_are_the_models_to_fix(root: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with model_server("openai", [use(("Read", "{not json")), say("fixed")]) as server:
        configure(server, monkeypatch)
        text = await run_agent(load(root).session("default"), "go")
    assert text.endswith("fixed") and server.problems == []
    assert "not valid JSON" in tool_results(server, 1)[0]["content"]


@pytest.mark.slow
async def test_a_runner_child_hears_of_its_background_work(api: str, root: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def route(request: dict[str, Any]) -> Any:
        system = request["system"] if api == "anthropic" else request["messages"][0]["content"]
        text = json.dumps(request["messages"])
        if "for: inner" in system:
            return say("inner says 42")
        if "Background task" in text:
            return say("outer heard: inner says 42" if "inner says 42" in text else "outer heard nothing")
        if "Started the general-purpose agent" in text:
            return say("waiting for it")
        return use(("Agent", {"description": "inner", "prompt": "compute"}))

    with model_server(api, []) as server:
        server.route = route
        configure(server, monkeypatch)
        text = await run_agent(load(root).session("default"), "delegate")
    assert server.problems == []
    assert text.splitlines()[1] == "outer heard: inner says 42"


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def cli_env(root: Path) -> Iterator[dict[str, str]]:
    yield {**os.environ, "PEGBOARD_PLUGINS": "fs,subtasks"}


@pytest.mark.slow
async def test_a_follow_up_from_a_second_process_runs_under_the_spawns_terms(
        api: str, root: Path, monkeypatch: pytest.MonkeyPatch, cli_env: dict[str, str]) -> None:
    notes = str(root / "notes.md")
    steps = [use(("Read", {"file_path": notes})), say("The notes say alpha."),
             use(("Write", {"file_path": notes, "content": "changed"})), say("I may not write; unchanged.")]
    with model_server(api, steps) as server:
        configure(server, monkeypatch)
        env = {**cli_env, **{k: v for k, v in os.environ.items() if k.endswith("_API_KEY")}}
        first = run_cli("--cwd", str(root), "agent", "run", "--session", "parent-9", "--mode", "acceptEdits",
                        "--agent", "Explore", "What do the notes say?", env=env)
        assert first.returncode == 0, first.stderr
        child = first.stdout.splitlines()[0]
        assert first.stdout.splitlines()[1] == "The notes say alpha."
        # Another process, in a wider mode: the child still runs as Explore did.
        second = run_cli("--cwd", str(root), "call", "SendMessage", "--session", "parent-9", "--mode",
                         "bypassPermissions", "--input", json.dumps({"to": child, "message": "Now change them."}),
                         env=env)
        assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.splitlines()[:2] == [child, "I may not write; unchanged."]
    assert (root / "notes.md").read_text() == "alpha\nbeta\n"
    assert server.problems == []
    resumed = server.requests[2]
    history = json.dumps(resumed["messages"])
    assert "What do the notes say?" in history and "The notes say alpha." in history and "1\\talpha" in history
    assert "continues in a new session" in history and "Now change them." in history
    names = {t["name"] if api == "anthropic" else t["function"]["name"] for t in resumed["tools"]}
    assert "Write" not in names
    assert "Write is not offered to this sub-agent" in json.dumps(server.requests[3]["messages"])
    listed = run_cli("--cwd", str(root), "call", "ListAgents", "--session", "parent-9", env=env)
    assert f"{child}\tWhat do the notes say?\tExplore\tidle\tturns=2" in listed.stdout

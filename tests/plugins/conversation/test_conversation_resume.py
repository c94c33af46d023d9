"""Issue 37's promise for the conversation plugin, end to end: a host records a
200-message conversation of a durable session and compacts it; the model,
which no longer has the early messages in its window, finds a detail of the
first one with ConversationSearch and reads it with ConversationRead. Then
examples/conversation_agent.py resumes the session in another process (a real
subprocess on the same store, SQLite or PostgreSQL) and its model does the
same, checks its window and has it compacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _model_loops import run_loop
from _model_servers import model_server, say, use
from pegboard import Toolbox
from pegboard.plugins.conversation import ConversationLog

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "conversation_agent.py"
DETAIL = "The staging database listens on port 6543 and its user is orbit."
SESSION = "long-chat"


def long_conversation() -> list[dict[str, Any]]:
    """200 messages of an Anthropic conversation: the task (with the detail), 99 tool calls and their
    results (every tenth a large output), and the final answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"Set up staging. {DETAIL}"}]
    for n in range(1, 100):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {n}."},
            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"make step{n}"}}]})
        output = f"step {n} ok\n" * (500 if n % 10 == 0 else 1)
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                                      "content": output}]})
    messages.append({"role": "assistant", "content": "Staging is ready."})
    return messages


def results(request: dict[str, Any]) -> str:
    """The text of the tool results a request ends with."""
    last = request["messages"][-1]["content"]
    blocks = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
    return "\n".join(part.get("text", "") for b in blocks for part in b.get("content", []))


@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
async def test_a_compacted_conversation_is_found_again_here_and_in_another_process(store_url: str,
                                                                                  tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    toolbox = Toolbox.load(cwd=project, plugins=["conversation"])
    session = toolbox.session("default", session_id=SESSION)
    log = ConversationLog(toolbox)
    conversation = long_conversation()
    assert len(conversation) == 200
    for message in conversation:  # as a host records each message it sends or receives
        log.record(session, message)
    # The host compacts: its live window is a summary that dropped the detail, and the question.
    live = [{"role": "user", "content": "[A summary of the conversation so far.] We set up staging in 99 steps; "
                                        "all passed.\n\nWhich port does the staging database use?"}]
    assert log.record(session, live[0]) == [201]

    steps = [use(("ToolSearch", {"query": "select:ConversationSearch,ConversationRead"})),
             use(("ConversationSearch", {"query": "staging database"})),
             use(("ConversationRead", {"start": 1})),
             say("Port 6543.")]
    with model_server("anthropic", steps) as server:
        await run_loop("anthropic", server.url, session, live)
    await session.aclose()
    assert server.problems == [], server.problems
    assert "6543" not in json.dumps(server.requests[0]) and "6543" not in json.dumps(server.requests[1])
    found = results(server.requests[2])
    assert found.startswith(f"#1 user: Set up staging. {DETAIL}\n"), found
    assert f"#1 user:\nSet up staging. {DETAIL}\n\n(Message #1 of 201." in results(server.requests[3])

    # Another process resumes the session: examples/conversation_agent.py, its model scripted.
    steps = [use(("ToolSearch", {"query": "select:ConversationSearch,ConversationRead,ContextCheck,ContextCompact"})),
             use(("ConversationSearch", {"query": "step 50 ok", "limit": 2})),
             use(("ConversationRead", {"start": 1, "count": 2})),
             use(("ContextCheck", {})),
             use(("ContextCompact", {"instructions": "Keep the database port.", "keep_recent": False})),
             say("Summary: the staging database listens on port 6543."),  # the compaction's own request
             say("The staging database listens on port 6543.")]
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE"))}
    with model_server("anthropic", steps) as server:
        environ |= {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": server.url, "MODEL": "test-model",
                    "SESSION_ID": SESSION}
        done = subprocess.run([sys.executable, str(EXAMPLE), "Which port does the staging database use?"],
                              cwd=project, env=environ, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "The staging database listens on port 6543."
    assert server.problems == [], server.problems
    requests = server.requests
    assert len(requests) == 7
    assert requests[0]["messages"][0]["content"].startswith("(This conversation was resumed")
    large = results(requests[2])
    assert large.startswith('#101 user: step 50 ok [in a large part: scratchpad entry "conversation#101.1" holds')
    assert f"#1 user:\nSet up staging. {DETAIL}\n\n#2 assistant:\nStep 1." in results(requests[3])
    assert results(requests[4]).startswith("Using 15 of 200,000 tokens (0%).\nHeadroom: 159,985 tokens before "
                                           "compaction at 160,000")
    assert results(requests[5]).startswith("Compaction requested")
    assert "tools" not in requests[5] and "Keep the database port." in json.dumps(requests[5]["messages"][-1])
    after = requests[6]["messages"]
    assert after[0]["content"].startswith("[A summary of the conversation so far. The messages it replaces are "
                                          "still found by ConversationSearch")
    assert "Summary: the staging database listens on port 6543." in after[0]["content"] and len(after) == 1

    # What that process recorded is in the log too: its task, its replies, its summary.
    again = Toolbox.load(cwd=project, plugins=["conversation"]).session("default", session_id=SESSION)
    again.loaded.add("ConversationSearch")
    summary = (await again.call("ConversationSearch", {"query": "summary: the staging"})).text_content()
    assert summary.startswith("#213 user: Summary: the staging database listens on port 6543."), summary
    asked = (await again.call("ConversationSearch", {"query": "which port"})).text_content()
    assert asked.startswith("#201 user: Which port does the staging database use?\n"
                            "#202 user: Which port does the staging database use?\n"), asked
    await again.aclose()

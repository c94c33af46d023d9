"""The conversation plugin: ConversationSearch and ConversationRead over the
log the host records (in memory, or in the store for a durable session) or
gives through its hook; ContextCheck and ContextCompact through the host's
hooks; each absent, with the reason, where the host provides nothing."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox, ToolResult, hookimpl
from pegboard.plugins.conversation import ContextUsage, ConversationLog

pytestmark = pytest.mark.anyio

TOOLS = ("ConversationSearch", "ConversationRead", "ContextCheck", "ContextCompact")

# One message of each shape the APIs use.
ANTHROPIC = [
    {"role": "user", "content": "Set up staging. The staging database listens on port 6543."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading the config."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                       "input": {"file_path": "/srv/app/config.toml"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": [{"type": "text", "text": "[db]\nhost = 'db.internal'"},
                                              {"type": "image", "source": {"type": "base64",
                                                                           "media_type": "image/png",
                                                                           "data": "iVBORw0KGgo" * 300}}]}]},
]
CHAT = [
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_9", "type": "function",
                     "function": {"name": "Grep", "arguments": "{\"pattern\": \"TIMEOUT\"}"}}]},
    {"role": "tool", "tool_call_id": "call_9", "content": "settings.py:12: TIMEOUT = 30"},
]
RESPONSES = [
    {"type": "function_call", "call_id": "fc_3", "name": "Bash", "arguments": "{\"command\": \"make deploy\"}"},
    {"type": "function_call_output", "call_id": "fc_3", "output": "deployed release 2026.12.1"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Deployed."}]},
]


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    root = tmp_path / "project"
    root.mkdir()
    return Toolbox.load(cwd=root, plugins=["conversation"])


def record(session: Any, *messages: Any) -> list[int]:
    """What a host does with each message: ``ConversationLog(toolbox).record``."""
    return ConversationLog(session.toolbox).record(session, *messages)


def new_session(toolbox: Toolbox, mode: str = "default", **options: Any) -> Any:
    """A session whose deferred tools are loaded, as ToolSearch would (their results carry no note)."""
    session = toolbox.session(mode, **options)
    session.loaded.update(TOOLS)
    return session


def offered(session: Any) -> set[str]:
    return {t.name for t in session.offered()} & set(TOOLS)


async def call(session: Any, name: str, args: dict[str, Any]) -> ToolResult:
    return await session.call(name, args)


# --- absent, with the reason -------------------------------------------------------------


async def test_without_a_log_or_hooks_the_tools_are_absent_and_say_why(toolbox: Toolbox) -> None:
    session = new_session(toolbox, "default")
    assert offered(session) == set()
    refused = await call(session, "ConversationSearch", {"query": "port"})
    assert refused.is_error
    assert refused.text_content() == (
        "ConversationSearch is not offered in this session: the host keeps no conversation log for this session "
        "(a host records its messages with pegboard.plugins.conversation.ConversationLog, or implements "
        "pegboard_conversation_messages).")
    assert "pegboard_context_usage" in (await call(session, "ContextCheck", {})).text_content()
    assert "pegboard_context_compact" in (await call(session, "ContextCompact", {})).text_content()


@pytest.fixture
def pegboard_installed() -> list[str]:
    """The installed plugins ``pegboard_cli`` loads: this one."""
    return ["conversation"]


@pytest.mark.slow
def test_tools_list_says_why_each_is_absent(pegboard_cli: Any) -> None:
    listed = pegboard_cli("tools", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert "the host keeps no conversation log" in rows["ConversationSearch"]["status"]
    assert rows["ConversationRead"]["absent"] == rows["ConversationSearch"]["absent"]
    assert rows["ContextCheck"]["absent"] == "the host reports no token counts (a host implements " \
                                             "pegboard_context_usage)"
    assert "pegboard_context_compact" in rows["ContextCompact"]["absent"]
    text = pegboard_cli("tools", "list").stdout
    assert "a plain one lacks it: the host keeps no conversation log" in text


# --- a log recorded in memory ------------------------------------------------------------------


async def test_recorded_messages_of_every_shape_are_searched_and_read(toolbox: Toolbox) -> None:
    session = new_session(toolbox, "default")
    events: list[tuple[str, dict[str, Any]]] = []
    toolbox.add_host(type("Events", (), {"pegboard_event": hookimpl(
        lambda self, session, kind, data: events.append((kind, data)))})())
    assert record(session, *ANTHROPIC) == [1, 2, 3]
    assert offered(session) == {"ConversationSearch", "ConversationRead"}
    assert ("catalogue.changed", {"reason": "conversation recorded"}) in events
    assert await ConversationLog(toolbox).arecord(session, *CHAT) == [4, 5]
    assert record(session, *RESPONSES) == [6, 7, 8]

    found = await call(session, "ConversationSearch", {"query": "STAGING DATABASE"})
    assert found.text_content().startswith("#1 user: Set up staging. The staging database listens on port 6543.\n")
    assert "(1 match in 8 messages.)" in found.text_content()
    regex = await call(session, "ConversationSearch", {"query": r"TIMEOUT = \d+", "regex": True})
    assert "#5 tool: settings.py:12: TIMEOUT = 30" in regex.text_content()
    assert "#4 assistant" not in regex.text_content()  # its line has TIMEOUT but not the number
    assert "No line of the 8 messages searched" in (await call(session, "ConversationSearch",
                                                              {"query": "timeout", "regex": True})).text_content()
    bad = await call(session, "ConversationSearch", {"query": "(unclosed", "regex": True})
    assert bad.is_error and "not a valid regular expression" in bad.text_content()

    read = (await call(session, "ConversationRead", {"start": 2, "count": 4})).text_content()
    assert read.startswith("#2 assistant:\nReading the config.\n[call Read (toolu_1)] {\"file_path\": "
                           "\"/srv/app/config.toml\"}\n\n#3 user:\n[result of toolu_1]\n[db]\nhost = 'db.internal'\n"
                           "[image: image/png, about 2 KB]")
    assert "#4 assistant:\n[call Grep (call_9)] {\"pattern\": \"TIMEOUT\"}" in read
    assert "#5 tool:\n[result of call_9]\nsettings.py:12: TIMEOUT = 30" in read
    assert read.endswith("(Messages #2 to #5 of 8. ConversationRead start=6 reads on.)")
    last = (await call(session, "ConversationRead", {"start": 6, "count": 20})).text_content()
    assert "#6 assistant:\n[call Bash (fc_3)] {\"command\": \"make deploy\"}" in last
    assert "#7 tool:\n[result of fc_3]\ndeployed release 2026.12.1" in last and "#8 assistant:\nDeployed." in last
    past = await call(session, "ConversationRead", {"start": 9})
    assert past.is_error and past.text_content() == "There is no message #9: the conversation has 8 (#1 to #8)."
    too_many = await call(session, "ConversationRead", {"start": 1, "count": 21})
    assert too_many.is_error and "count" in too_many.text_content()
    assert (await call(session, "ConversationSearch", {"query": "x", "limit": 101})).is_error


async def test_sdk_objects_are_recorded_and_a_message_that_is_none_is_named(toolbox: Toolbox) -> None:
    from pydantic import BaseModel

    class Block(BaseModel):  # as the SDKs' response types are: pydantic models, None for what is unset
        type: str
        text: str
        citations: list[str] | None = None

    class Reply(BaseModel):
        id: str
        role: str
        content: list[Block]
        stop_sequence: str | None = None

    session = new_session(toolbox, "default")
    reply = Reply(id="msg_1", role="assistant", content=[Block(type="text", text="The answer is 42.")])
    assert record(session, reply) == [1]
    assert "#1 assistant: The answer is 42." in (await call(session, "ConversationSearch",
                                                            {"query": "answer"})).text_content()
    with pytest.raises(ValueError, match=r"^message 2 of 2 given to record: a message needs a role"):
        record(session, {"role": "user", "content": "fine"}, {"content": "no role"})
    with pytest.raises(ValueError, match=r"^message 1 of 1 given to record: a message is a dict"):
        record(session, "just text")
    assert record(session) == []


async def test_the_limit_stops_the_search_and_says_so(toolbox: Toolbox) -> None:
    session = new_session(toolbox, "default")
    record(session, *({"role": "user", "content": f"deploy step {n}"} for n in range(1, 151)))
    found = (await call(session, "ConversationSearch", {"query": "deploy", "limit": 100})).text_content()
    assert found.count("\n#") == 99 and found.splitlines()[99] == "#100 user: deploy step 100"
    assert "(Stopped at 100 matches, at message #100: narrow the query, or raise limit (at most 100).)" in found
    default = (await call(session, "ConversationSearch", {"query": "deploy"})).text_content()
    assert "Stopped at 20 matches" in default


async def test_large_outputs_are_references_read_with_scratchpad_read(toolbox: Toolbox) -> None:
    session = new_session(toolbox, "default")
    output = "".join(f"line {n}: build ok\n" for n in range(1, 2001)) + "line 2001: the flaky test is test_upload\n"
    record(session, {"role": "user", "content": "run the build"},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]})
    read = (await call(session, "ConversationRead", {"start": 2})).text_content()
    assert read.startswith('#2 user:\n[large: scratchpad entry "conversation#2.1" holds all ')
    assert "line 3: build ok" in read and "line 2000" not in read and len(read) < 1000
    whole = await call(session, "ScratchpadRead", {"name": "conversation#2.1", "offset": len(output) - 100})
    assert "the flaky test is test_upload" in whole.text_content()
    found = (await call(session, "ConversationSearch", {"query": "flaky"})).text_content()
    assert found.startswith('#2 user: line 2001: the flaky test is test_upload [in a large part: scratchpad entry '
                            '"conversation#2.1" holds all')
    # The scratchpad parameter lifts the cap: the messages are saved whole.
    saved = await call(session, "ConversationRead", {"start": 1, "count": 2, "scratchpad": "build"})
    assert "Saved" in saved.text_content() and "test_upload" in session.scratchpad["build"]
    assert "[large:" not in session.scratchpad["build"]


async def test_parts_past_the_cap_are_cut_with_a_note(toolbox: Toolbox) -> None:
    from pegboard.plugins.conversation._messages import MAX_PART_CHARS

    session = new_session(toolbox, "default")
    record(session, {"role": "user", "content": "x" * (MAX_PART_CHARS + 5)})
    await call(session, "ConversationRead", {"start": 1})
    kept = session.scratchpad["conversation#1.1"]
    assert kept.endswith("\n[5 more characters were not recorded]") and len(kept) < MAX_PART_CHARS + 100


async def test_record_does_nothing_where_the_plugin_is_not_loaded(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[])
    log = ConversationLog(toolbox)
    assert not log.enabled and log.record(toolbox.session(), {"role": "user", "content": "hello"}) == []
    config = tmp_path / "off.toml"
    config.write_text("[plugins.conversation]\nenabled = false\n")
    assert not ConversationLog(Toolbox.load(cwd=tmp_path, plugins=["conversation"], config=config)).enabled


async def test_the_log_follows_the_plugin_under_another_name(tmp_path: Path) -> None:
    import pegboard.plugins.conversation as plugin

    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"recall": plugin})
    session = new_session(toolbox)
    assert ConversationLog(toolbox).record(session, {"role": "user", "content": "kept under recall"}) == [1]
    assert session.plugin_state("recall")["log"] and "conversation" not in session._plugin_state
    assert "#1 user: kept under recall" in (await call(session, "ConversationSearch",
                                                      {"query": "kept"})).text_content()


# --- a host that keeps the conversation itself -----------------------------------------------------


class KeepingHost:
    def __init__(self, messages: Any) -> None:
        self.messages = messages

    @hookimpl
    async def pegboard_conversation_messages(self, session: Any) -> Any:
        await asyncio.sleep(0)
        return self.messages


async def test_the_hosts_own_log_through_its_hook(tmp_path: Path) -> None:
    host = KeepingHost([*ANTHROPIC, *CHAT])
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["conversation"], host=host)
    session = new_session(toolbox, "default")
    assert offered(session) == {"ConversationSearch", "ConversationRead"}
    assert "#5 tool: settings.py:12: TIMEOUT = 30" in (await call(session, "ConversationSearch",
                                                                  {"query": "timeout ="})).text_content()
    assert (await call(session, "ConversationRead", {"start": 1})).text_content().startswith("#1 user:\nSet up")
    host.messages = None  # passes: what was recorded is read instead
    none_recorded = await call(session, "ConversationSearch", {"query": "x"})
    assert none_recorded.is_error and "No conversation is recorded for this session" in none_recorded.text_content()
    record(session, {"role": "user", "content": "recorded instead"})
    assert "#1 user: recorded instead" in (await call(session, "ConversationSearch",
                                                      {"query": "instead"})).text_content()
    host.messages = [{"role": "user", "content": "ok"}, 42]
    broken = await call(session, "ConversationSearch", {"query": "ok"})
    assert broken.is_error and broken.text_content() == (
        "The host's conversation cannot be read: message 2 of 2: a message is a dict (an "
        "Anthropic or OpenAI message, or a Responses item), not int.")
    host.messages = "not a list"
    assert "not a list of messages" in (await call(session, "ConversationSearch", {"query": "x"})).text_content()


# --- the live window: ContextCheck and ContextCompact -------------------------------------------------


class WindowHost:
    def __init__(self) -> None:
        self.usage: Any = ContextUsage(used_tokens=84_000, window_tokens=200_000, compact_at_tokens=160_000,
                                       kept_recent_tokens=16_000, overhead_tokens=12_000, compactions=0)
        self.compact: Any = True
        self.asked: list[tuple[Any, ...]] = []

    @hookimpl
    def pegboard_context_usage(self, session: Any) -> Any:
        if isinstance(self.usage, Exception):
            raise self.usage
        return self.usage

    @hookimpl
    def pegboard_context_compact(self, session: Any, instructions: Any, keep_recent: Any) -> Any:
        self.asked.append((session.id, instructions, keep_recent))
        return self.compact


async def test_context_check_reports_the_hosts_figures(tmp_path: Path) -> None:
    host = WindowHost()
    session = new_session(Toolbox.load(cwd=tmp_path, plugins=["conversation"], host=host), "default")
    assert offered(session) == {"ContextCheck", "ContextCompact"}
    checked = await call(session, "ContextCheck", {})
    assert checked.text_content() == (
        "Using 84,000 of 200,000 tokens (42%).\n"
        "Headroom: 76,000 tokens before compaction at 160,000 (80% of the window).\n"
        "Kept word for word on compaction: about 16,000 tokens of the most recent turns; everything older is "
        "replaced by a summary.\n"
        "Fixed overhead: about 12,000 tokens of system prompt and tool definitions, which compaction does not "
        "reclaim.\n"
        "Conversation: about 72,000 tokens, the part compaction acts on.\n"
        "Compactions so far: none, so nothing has been summarised away yet.")
    assert checked.structured_content == host.usage.model_dump(exclude_none=True)
    record(session, {"role": "user", "content": "hi"})
    host.usage = {"used_tokens": 190_000, "window_tokens": 200_000, "compactions": 2}
    again = (await call(session, "ContextCheck", {})).text_content()
    assert again.startswith("Using 190,000 of 200,000 tokens (95%).\nHeadroom: 10,000 tokens before the window is "
                            "full.\n")
    assert again.endswith("Compactions so far: 2. What they summarised away is still found by ConversationSearch "
                          "and read by ConversationRead.")
    host.usage = {"used_tokens": -1, "window_tokens": 0}
    bad = await call(session, "ContextCheck", {})
    assert bad.is_error and "used_tokens: Input should be greater than or equal to 0" in bad.text_content()
    assert "window_tokens: Input should be greater than 0" in bad.text_content()
    host.usage = None
    assert (await call(session, "ContextCheck", {})).text_content() == (
        "The host has no figures for this session's context window.")
    host.usage = RuntimeError("the model's tokenizer is not loaded")
    assert (await call(session, "ContextCheck", {})).text_content() == (
        "The host could not report the context window (RuntimeError: the model's tokenizer is not loaded).")


async def test_context_compact_asks_the_host(tmp_path: Path) -> None:
    host = WindowHost()
    session = new_session(Toolbox.load(cwd=tmp_path, plugins=["conversation"], host=host), "default")
    done = await call(session, "ContextCompact", {"instructions": "keep the port numbers"})
    assert not done.is_error and done.text_content() == (
        "Compaction requested: it runs once this batch of tool calls is answered, and you continue from a "
        "summary, the most recent turns kept word for word.")
    assert host.asked == [(session.id, "keep the port numbers", True)]
    host.compact = "Compacting after this batch; you have 3 compactions left today."
    said = await call(session, "ContextCompact", {"keep_recent": False})
    assert said.text_content() == host.compact and host.asked[-1] == (session.id, None, False)
    host.compact = False
    assert (await call(session, "ContextCompact", {})).text_content() == (
        "The host will not compact the conversation now.")
    assert (await call(session, "ContextCompact", {"instructions": "x" * 4001})).is_error


@pytest.mark.parametrize("mode, decision", [
    ("default", "allow"), ("acceptEdits", "allow"), ("plan", "allow"), ("auto", "allow"), ("dontAsk", "allow"),
    ("bypassPermissions", "allow"), ("read", "allow"), ("workspace", "allow"), ("unrestricted", "allow"),
    ("ask", "ask"), ("none", "deny"),
])
async def test_permission_by_mode(tmp_path: Path, mode: str, decision: str) -> None:
    host = WindowHost()
    session = new_session(Toolbox.load(cwd=tmp_path, plugins=["conversation"], host=host), mode)
    record(session, {"role": "user", "content": "hello"})
    for name, args in (("ConversationSearch", {"query": "hello"}), ("ConversationRead", {"start": 1}),
                       ("ContextCheck", {}), ("ContextCompact", {})):
        found = await session.decide(name, args)
        assert found.decision == decision, (name, found.reason)
    assert offered(session) == (set() if mode == "none" else set(TOOLS))


# --- a durable session: the store, another process ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("store_url", ["sqlite", "postgresql"], indirect=True)
async def test_writers_side_by_side_lose_nothing(store_url: str, tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["conversation"])
    sessions = [new_session(toolbox, "default", session_id="shared-log") for _ in range(4)]
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for k in range(25):
                record(sessions[n], {"role": "user", "content": f"writer {n} message {k}"})
        except BaseException as exc:  # noqa: BLE001  (the test reports it)
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    session = new_session(toolbox, "default", session_id="shared-log")
    read = [(await call(session, "ConversationRead", {"start": s, "count": 20})).text_content()
            for s in range(1, 101, 20)]
    texts = [line for block in read for line in block.splitlines() if line.startswith("writer ")]
    assert sorted(texts) == sorted(f"writer {n} message {k}" for n in range(4) for k in range(25))
    assert "of 100." in read[-1]


@pytest.mark.slow
async def test_a_durable_log_is_offered_on_resuming_and_goes_with_the_session(tmp_path: Path) -> None:
    first = Toolbox.load(cwd=tmp_path, plugins=["conversation"])
    session = new_session(first, "default", session_id="kept-log")
    assert offered(session) == set()
    record(session, {"role": "user", "content": "the release is called Aurora"})
    await session.aclose()
    again = Toolbox.load(cwd=tmp_path, plugins=["conversation"])
    resumed = new_session(again, "default", session_id="kept-log")
    assert offered(resumed) == {"ConversationSearch", "ConversationRead"}  # nothing recorded by this process
    assert "#1 user: the release is called Aurora" in (await call(resumed, "ConversationSearch",
                                                                  {"query": "aurora"})).text_content()
    await resumed.aclose()
    assert again.delete_sessions(["kept-log"]) == (["kept-log"], [])
    fresh = new_session(Toolbox.load(cwd=tmp_path, plugins=["conversation"]), "default", session_id="kept-log")
    assert offered(fresh) == set()

"""What pegboard answers when a real SDK server asks its client: elicitation
through the host, roots from the session, progress and log messages as
events, and the client's name and version."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_servers.helpers import HERE
from pegboard import Toolbox, hookimpl

pytestmark = pytest.mark.anyio

CAPS = HERE / "capabilities.py"


def config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "pegboard.toml"
    path.write_text(f'[plugins.mcp]\nlog_level = "warning"\n[plugins.mcp.servers.caps]\n'
                    f'command = "{sys.executable}"\nargs = ["{CAPS}"]\nprotocol = "legacy"\n'
                    f'[permissions]\nallow = ["mcp__caps"]\n{extra}')
    return path


class Host:
    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.forms: list[tuple[str, str, dict[str, Any]]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, data))


class FormHost(Host):
    @hookimpl
    def pegboard_elicit(self, source: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        self.forms.append((source, message, schema))
        return self.answer


@pytest.mark.slow
async def test_elicitation_goes_to_the_host_and_defaults_fill_in(tmp_path: Path) -> None:
    host = FormHost({"action": "accept", "content": {"name": "Ada"}})
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=host)
    async with toolbox.session() as session:
        result = await session.call("mcp__caps__book", {})
        assert result.text_content() == "booked 2 seats for Ada", result.text_content()
    ((source, message, schema),) = host.forms
    assert source == "MCP server 'caps'" and message == "Who is the booking for?"
    assert set(schema["properties"]) == {"name", "seats"}


@pytest.mark.slow
async def test_headless_declines_the_form(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=Host(None))
    async with toolbox.session() as session:
        assert (await session.call("mcp__caps__book", {})).text_content() == "booking decline"


@pytest.mark.slow
async def test_roots_are_the_sessions_working_directories(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"])
    async with toolbox.session() as session:
        session.add_working_dir(extra)
        listed = (await session.call("mcp__caps__roots", {})).text_content().splitlines()
    assert listed == [tmp_path.resolve().as_uri(), extra.resolve().as_uri()]


@pytest.mark.slow
async def test_progress_and_logs_become_events_at_the_configured_level(tmp_path: Path) -> None:
    host = Host(None)
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=host)
    async with toolbox.session() as session:
        assert (await session.call("mcp__caps__count", {})).text_content() == "counted"
    progress = [d for k, d in host.events if k == "progress"]
    assert [(d["progress"], d["total"], d["message"]) for d in progress] == [(1, 3, "step 1"), (2, 3, "step 2"),
                                                                             (3, 3, "step 3")]
    assert all(d["tool"] == "mcp__caps__count" and d["server"] == "caps" for d in progress)
    logs = [d for k, d in host.events if k == "mcp.log"]
    assert [d["data"] for d in logs] == ["warning 1", "warning 2", "warning 3"]  # debug is below the level


class ModelHost(Host):
    """A host with a model: answers a server's sampling request (or passes, with None)."""

    def __init__(self, answer: Any) -> None:
        super().__init__(None)
        self.reply = answer
        self.requests: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    async def pegboard_mcp_sample(self, session: Any, server: str, params: dict[str, Any]) -> Any:
        self.requests.append((server, params))
        return self.reply


@pytest.mark.slow
async def test_sampling_goes_to_the_hosts_model(tmp_path: Path) -> None:
    host = ModelHost({"role": "assistant", "content": {"type": "text", "text": "bees hum in the sun"},
                      "model": "host-model-1", "stopReason": "endTurn"})
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=host)
    async with toolbox.session() as session:
        result = await session.call("mcp__caps__haiku", {"topic": "bees"})
    assert result.text_content() == "host-model-1: bees hum in the sun", result.text_content()
    ((server, request),) = host.requests
    assert server == "caps" and request["maxTokens"] == 60 and request["systemPrompt"] == "Answer in one line."
    assert request["messages"] == [{"role": "user", "content": {"type": "text", "text": "A haiku about bees"}}]


@pytest.mark.slow
async def test_sampling_answers_a_host_may_give(tmp_path: Path) -> None:
    for reply, expected in (("just text", "pegboard-host: just text"),
                            (None, "sampling failed: the sampling request was declined"),
                            ({"role": "assistant"}, "sampling failed: the host's answer is not a sampling result")):
        toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=ModelHost(reply))
        async with toolbox.session() as session:
            text = (await session.call("mcp__caps__haiku", {"topic": "rain"})).text_content()
        assert text.startswith(expected), (reply, text)


@pytest.mark.slow
async def test_without_a_model_sampling_is_not_declared(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"], host=Host(None))
    async with toolbox.session() as session:
        assert (await session.call("mcp__caps__haiku", {"topic": "x"})).text_content() == \
            "the client offers no sampling"


async def test_the_client_says_it_is_pegboard(tmp_path: Path) -> None:
    from importlib.metadata import version

    seen: list[Any] = []
    server = MCPServer("who")

    @server.tool()
    async def whoami(ctx: Context) -> str:
        seen.append(ctx.request_context.session.client_params)
        return "ok"

    cfg = tmp_path / "pegboard.toml"
    cfg.write_text('[plugins.mcp.servers.who]\ncommand = "unused"\nprotocol = "legacy"\n'
                   '[permissions]\nallow = ["mcp__who"]\n')
    from pegboard.plugins.mcp._store import ToolCache  # the record lets the session start in memory

    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"], listing=True)
    context = toolbox.context_for("mcp")
    from pegboard.plugins.mcp._config import collect_servers, own_folder

    (spec,) = collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
    from mcp import Client

    async with Client(server) as probe:
        listed = (await probe.list_tools()).tools
    ToolCache(own_folder(context)).update(spec, [(t.name, t.description, t.input_schema) for t in listed])
    seen.clear()
    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"])
    async with toolbox.session() as session:
        session.plugin_state("mcp")["targets"] = {"who": server}
        assert (await session.call("mcp__who__whoami", {})).text_content() == "ok"
    info = seen[0].client_info
    assert (info.name, info.version) == ("pegboard", version("pegboard"))
    assert seen[0].capabilities.roots is not None and seen[0].capabilities.sampling is None


@pytest.mark.slow
async def test_resource_templates_are_listed_for_the_model(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, config=config(tmp_path), plugins=["mcp"])
    async with toolbox.session() as session:
        listed = (await session.call("ListMcpResourcesTool", {"server": "caps"})).text_content()
        assert "notes://{topic}  note (text/plain, A note on a topic)" in listed
        read = await session.call("ReadMcpResourceTool", {"server": "caps", "uri": "notes://bees"})
        assert read.text_content() == "a note on bees"


@pytest.mark.slow
async def test_prompts_for_an_embedding_host_and_the_command_line(tmp_path: Path) -> None:
    import os
    import subprocess

    from pegboard.plugins.mcp import get_prompt, list_prompts

    cfg = config(tmp_path)
    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"])
    async with toolbox.session() as session:
        (prompt,) = (await list_prompts(toolbox, session))["caps"]
        assert prompt.name == "review" and [a.name for a in prompt.arguments] == ["path", "focus"]
        got = await get_prompt(toolbox, session, "caps", "review", {"path": "a.py"})
        assert got.messages[0].content.text == "Review a.py for bugs."
    pegboard = Path(sys.executable).parent / "pegboard"
    out = subprocess.run([str(pegboard), "--cwd", str(tmp_path), "--config", str(cfg), "mcp", "prompts", "caps",
                          "review", "--arg", "path=b.py", "--arg", "focus=style"],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip() == "user: Review b.py for style.", out.stderr
    listed = subprocess.run([str(pegboard), "--cwd", str(tmp_path), "--config", str(cfg), "mcp", "prompts"],
                            capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert "review" in listed.stdout and "path focus?" in listed.stdout, listed.stderr

"""The mcp plugin inside a real Toolbox: config, .mcp.json, approvals, the
tool cache, permissions, changed tools, and sessions that stop their servers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_servers.helpers import KITCHEN_SINK, pid_alive, wait_dead
from pegboard import Toolbox
from pegboard._loading.config import ConfigError
from pegboard._api.decisions import Answer
from pegboard._api.hookspecs import hookimpl

pytestmark = pytest.mark.anyio



def write_config(root: Path, servers: dict[str, dict[str, Any]], extra: str = "") -> Path:
    lines = []
    for name, table in servers.items():
        lines.append(f"[plugins.mcp.servers.{name}]")
        for key, value in table.items():
            lines.append(f"{key} = {toml_value(value)}")
    path = root / "pegboard.toml"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def ks(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(KITCHEN_SINK)], **extra}


class Host:
    """Answers every ask with ``allow`` and records the questions."""

    def __init__(self, allow: bool = True) -> None:
        self.allow = allow
        self.asked: list[tuple[str, str]] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asked.append((request.tool.name, decision.reason))
        return Answer(allow=self.allow)


def load(root: Path, config: Path | None, host: object | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, config=config, plugins=["mcp"], host=host)


async def warm_cache(root: Path, config: Path | None) -> None:
    """A first session lists resources, which starts the servers and records their tools."""
    toolbox = load(root, config)
    async with toolbox.session() as session:
        result = await session.call("ListMcpResourcesTool", {})
        assert not result.is_error, result.text_content()


@pytest.mark.slow
async def test_first_toolbox_lists_a_new_server_and_later_ones_use_the_record(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks(eager_load_tools=["echo"], exclude_tools=["crash"])})
    # A listing toolbox (`pegboard tools list`) starts nothing and says what is missing.
    listing = Toolbox.load(cwd=tmp_path, config=config, plugins=["mcp"], listing=True)
    mine = sorted(n for n, t in listing.tools.items() if t.plugin == "mcp")
    assert mine == ["ListMcpResourcesTool", "ReadMcpResourceDirTool", "ReadMcpResourceTool"]
    assert any("'ks': tools not listed yet" in n for n in listing.plugins.notes())
    # The first toolbox a session can use connects, lists and records: no refresh step.
    first = load(tmp_path, config)
    assert "mcp__ks__echo" in first.tools and "mcp__ks__crash" not in first.tools
    assert first.settings.problems == []
    toolbox = load(tmp_path, config)
    echo = toolbox.tools["mcp__ks__echo"]
    assert echo.loading == "always" and not echo.read_only
    assert toolbox.tools["mcp__ks__add"].loading == "deferred"
    assert echo.schema["properties"]["text"]["type"] == "string"
    assert toolbox.description(echo) == "Echo the text back."
    assert toolbox.tools["mcp__ks__whoami"].title == "Process id" and echo.title is None  # kept in the record
    session = toolbox.session()
    assert "pool" not in session.plugin_state("mcp")  # the record was enough: nothing started
    await session.aclose()


async def test_a_server_that_cannot_be_listed_is_reported_and_not_waited_on_again(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"gone": {"command": str(tmp_path / "no-such-server")}})
    first = load(tmp_path, config)
    assert not any(n.startswith("mcp__gone__") for n in first.tools)
    assert any("'gone'" in p and "not offered" in p for p in first.settings.problems)
    # Within the retry interval a later toolbox does not try again, and says so.
    again = load(tmp_path, config)
    assert any("tried again after" in p for p in again.settings.problems)


@pytest.mark.slow
async def test_calls_ask_and_rules_allow(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()})
    await warm_cache(tmp_path, config)
    host = Host()
    toolbox = load(tmp_path, config, host)
    async with toolbox.session() as session:
        result = await session.call("mcp__ks__add", {"a": 1, "b": 2})
        assert result.structured_content == {"sum": 3}
        assert host.asked and host.asked[0][0] == "mcp__ks__add"
        session.grant("mcp__ks")  # a whole-server rule
        host.asked.clear()
        result = await session.call("mcp__ks__echo", {"text": "no question"})
        assert result.text_content() == "no question" and host.asked == []


@pytest.mark.slow
async def test_headless_ask_is_denied_naming_the_rule(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()})
    await warm_cache(tmp_path, config)
    async with load(tmp_path, config).session() as session:
        result = await session.call("mcp__ks__echo", {"text": "x"})
        assert result.is_error and "mcp__ks__echo" in result.text_content()
        assert "pool" not in session.plugin_state("mcp")  # a denied call starts nothing


@pytest.mark.slow
async def test_allow_rule_in_config(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()}, '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    async with load(tmp_path, config).session() as session:
        assert (await session.call("mcp__ks__echo", {"text": "ok"})).text_content() == "ok"


@pytest.mark.slow
async def test_rule_with_specifier_is_a_config_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()}, '[permissions]\nallow = ["mcp__ks(anything)"]\n')
    with pytest.raises(ConfigError, match="MCP rules take no specifier"):
        load(tmp_path, config)


async def test_bad_server_name_names_file_and_key(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bad__name": ks()})
    toolbox = load(tmp_path, config)
    error = toolbox.records["mcp"].error or ""
    assert str(config) in error and "servers" in error and "bad__name" in error


@pytest.mark.slow
async def test_mcp_json_server_needs_approval(tmp_path: Path, trust_project: Callable[[Path], Path]) -> None:
    from pegboard.plugins.mcp._config import collect_servers, own_folder
    from pegboard.plugins.mcp._store import Approvals

    trust_project(tmp_path)  # trusted, a project's servers still need approval

    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": sys.executable, "args": [str(KITCHEN_SINK)]},
        "bad__one": {"command": "x"},
    }}))
    toolbox = load(tmp_path, None)
    assert any(".mcp.json: mcpServers.bad__one" in p for p in toolbox.settings.problems)
    async with toolbox.session() as session:
        result = await session.call("ReadMcpResourceTool", {"server": "proj", "uri": "docs://readme"})
        assert result.is_error and "pegboard mcp approve proj" in result.text_content()
    context = toolbox.context_for("mcp")
    spec = next(s for s in collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
                if s.name == "proj")
    Approvals(own_folder(context)).approve(spec)
    async with load(tmp_path, None).session() as session:
        result = await session.call("ReadMcpResourceTool", {"server": "proj", "uri": "docs://readme"})
        assert result.text_content() == "read me first"
    # Editing the definition withdraws the approval.
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": sys.executable, "args": [str(KITCHEN_SINK), "--changed"]}}}))
    async with load(tmp_path, None).session() as session:
        result = await session.call("ReadMcpResourceTool", {"server": "proj", "uri": "docs://readme"})
        assert result.is_error and "not been approved" in result.text_content()


@pytest.mark.slow
async def test_resource_tools(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks(), "down": {"command": "/no/such/server"}})
    async with load(tmp_path, config).session() as session:
        listing = await session.call("ListMcpResourcesTool", {})
        text = listing.text_content()
        assert "docs://readme" in text and "## down" in text and "unavailable" in text
        one = await session.call("ListMcpResourcesTool", {"server": "ks"})
        assert "## down" not in one.text_content()
        folder = await session.call("ReadMcpResourceDirTool", {"server": "ks", "uri": "docs://guide"})
        assert "docs://guide/intro" in folder.text_content()
        assert "docs://guide/deep/" in folder.text_content() and "deep/part" not in folder.text_content()
        image = await session.call("ReadMcpResourceTool", {"server": "ks", "uri": "docs://logo"})
        assert image.content[0].type == "image"
        unknown = await session.call("ReadMcpResourceTool", {"server": "ks", "uri": "docs://no-such-page"})
        assert unknown.is_error and "docs://no-such-page" in unknown.text_content()
        assert unknown.text_content().count("MCP error") <= 1, unknown.text_content()  # the prefix once, if at all
        missing = await session.call("ReadMcpResourceTool", {"server": "nope", "uri": "x://y"})
        assert missing.is_error and "no MCP server is called 'nope'" in missing.text_content()


@pytest.mark.slow
async def test_changed_tool_asks_again_firmly(tmp_path: Path) -> None:
    variant = tmp_path / "variant.txt"
    config = write_config(tmp_path, {"ks": ks(env={"KS_VARIANT_FILE": str(variant)})},
                          '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    variant.write_text("Now it also sends your text to a third party.")
    host = Host()
    events: list[tuple[str, dict[str, Any]]] = []

    class Events:
        @hookimpl
        def pegboard_event(self, session: Any, kind: str, data: dict[str, Any]) -> None:
            events.append((kind, data))

    toolbox = load(tmp_path, config, host)
    toolbox.add_host(Events(), name="events")
    async with toolbox.session() as session:
        first = await session.call("mcp__ks__echo", {"text": "hi"})
        # The allow rule let the call through before anyone knew; the tool was not run.
        assert first.is_error and "definition changed" in first.text_content()
        # The new description is for a person to review, not for the model to read first.
        assert "third party" not in first.text_content()
        assert any(kind == "mcp.tools_changed" and "echo" in data["changed"] for kind, data in events)
        assert host.asked == []
        second = await session.call("mcp__ks__echo", {"text": "hi"})
        assert [name for name, _ in host.asked] == ["mcp__ks__echo"]  # firm: the allow rule did not wave it through
        assert "changed" in host.asked[0][1]
        assert second.text_content() == "hi"
        host.asked.clear()
        assert (await session.call("mcp__ks__echo", {"text": "again"})).text_content() == "again"
        assert host.asked == []  # approved once, remembered in the cache
    # A new toolbox sees the approved definition: no question.
    toolbox = load(tmp_path, config, host)
    assert "third party" in toolbox.description(toolbox.tools["mcp__ks__echo"])
    async with toolbox.session() as session:
        assert (await session.call("mcp__ks__echo", {"text": "x"})).text_content() == "x"
    assert host.asked == []


@pytest.mark.slow
async def test_changed_tool_known_from_cache_asks_before_starting(tmp_path: Path) -> None:
    variant = tmp_path / "variant.txt"
    config = write_config(tmp_path, {"ks": ks(env={"KS_VARIANT_FILE": str(variant)})},
                          '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    variant.write_text("Changed.")
    await warm_cache(tmp_path, config)  # the change is now in the cache, not yet approved
    host = Host(allow=False)
    toolbox = load(tmp_path, config, host)
    # The catalogue does not carry the unreviewed description either.
    described = toolbox.description(toolbox.tools["mcp__ks__echo"])
    assert "Changed." not in described and "definition changed" in described
    async with toolbox.session() as session:
        result = await session.call("mcp__ks__echo", {"text": "hi"})
        assert result.is_error and host.asked and "changed" in host.asked[0][1]


@pytest.mark.slow
async def test_crash_is_an_error_result_and_the_session_goes_on(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()}, '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    async with load(tmp_path, config).session() as session:
        crashed = await session.call("mcp__ks__crash", {})
        assert crashed.is_error and "crashing on purpose" in crashed.text_content()
        assert (await session.call("mcp__ks__echo", {"text": "back"})).text_content() == "back"


@pytest.mark.slow
async def test_timeout_is_an_error_result(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks(tool_timeout_s=0.5)}, '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    async with load(tmp_path, config).session() as session:
        result = await session.call("mcp__ks__hang", {})
        assert result.is_error and "no answer within 0.5 s" in result.text_content()


@pytest.mark.slow
async def test_closing_the_session_stops_servers_and_grandchildren(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks(), "other": ks()}, '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    session = load(tmp_path, config).session()
    grandchild = int((await session.call("mcp__ks__spawn_grandchild", {})).text_content())
    pool = session.plugin_state("mcp")["pool"]
    other = pool.connections["other"]
    await other.ensure_started()  # started alongside on first use
    pids = [c.process.pid for c in pool.connections.values()]
    assert all(pid and pid_alive(pid) for pid in pids) and pid_alive(grandchild)
    await session.aclose()
    assert wait_dead(grandchild)
    assert all(wait_dead(pid) for pid in pids if pid)


@pytest.mark.slow
async def test_tool_removed_by_the_server(tmp_path: Path) -> None:
    variant = tmp_path / "variant.txt"
    config = write_config(tmp_path, {"ks": ks(env={"KS_VARIANT_FILE": str(variant)})},
                          '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    variant.write_text("no-add")
    async with load(tmp_path, config).session() as session:
        result = await session.call("mcp__ks__add", {"a": 1, "b": 2})
        assert result.is_error and "no longer offers a tool called 'add'" in result.text_content()
        assert (await session.call("mcp__ks__echo", {"text": "fine"})).is_error  # echo changed too: asks first
    assert "mcp__ks__add" not in load(tmp_path, config).tools  # the cache now says so


@pytest.mark.slow
async def test_http_server_that_goes_away(tmp_path: Path) -> None:
    from mcp_servers.helpers import start_http_server

    proc, url = start_http_server()
    try:
        config = write_config(tmp_path, {"web": {"url": url, "startup_timeout_s": 5}},
                              '[permissions]\nallow = ["mcp__web"]\n')
        await warm_cache(tmp_path, config)
        async with load(tmp_path, config).session() as session:
            assert (await session.call("mcp__web__add", {"a": 2, "b": 3})).structured_content == {"sum": 5}
            proc.kill()  # gone at once, as in a crash (a graceful stop waits for our open streams)
            proc.wait(10)
            gone = await session.call("mcp__web__add", {"a": 2, "b": 3})
            assert gone.is_error and "mcp__web__add" in gone.text_content()
            again = await session.call("mcp__web__echo", {"text": "x"})
            assert again.is_error and "unavailable" in again.text_content()
            listing = await session.call("ListMcpResourcesTool", {})
            assert "## web" in listing.text_content() and "unavailable" in listing.text_content()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


async def test_in_memory_server_through_the_session(tmp_path: Path) -> None:
    """An embedder can hand the plugin an in-process server object for a configured name."""
    from mcp_servers.kitchen_sink import build

    config = write_config(tmp_path, {"mem": {"command": "never-run"}}, '[permissions]\nallow = ["mcp__mem"]\n')
    async with load(tmp_path, config).session() as session:
        session.plugin_state("mcp")["targets"] = {"mem": build()}
        listing = await session.call("ListMcpResourcesTool", {"server": "mem"})
        assert "docs://readme" in listing.text_content()
    toolbox = load(tmp_path, config)
    assert "mcp__mem__bundle" in toolbox.tools
    async with toolbox.session() as session:
        session.plugin_state("mcp")["targets"] = {"mem": build()}
        result = await session.call("mcp__mem__bundle", {})
        assert [c.type for c in result.content] == ["text", "resource"]


async def test_unsafe_tool_names_are_replaced_and_collisions_reported(tmp_path: Path) -> None:
    from pegboard.plugins.mcp._config import collect_servers, own_folder
    from pegboard.plugins.mcp._store import ToolCache

    config = write_config(tmp_path, {"odd": {"command": "never-run"}})
    toolbox = load(tmp_path, config)
    context = toolbox.context_for("mcp")
    (spec,) = collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
    schema = {"type": "object"}
    ToolCache(own_folder(context)).update(spec, [("get/item", "a", schema), ("get item", "b", schema),
                                              ("fine.name", "c", schema)])
    toolbox = load(tmp_path, config)
    assert toolbox.records["mcp"].error is None
    assert {"mcp__odd__get_item", "mcp__odd__fine.name"} <= set(toolbox.tools)
    assert toolbox.tools["mcp__odd__get_item"].metadata["tool"] == "get/item"
    assert any("'get item' is left out" in p for p in toolbox.settings.problems)


@pytest.mark.slow
async def test_tool_redefined_mid_session_asks_before_the_next_call(tmp_path: Path) -> None:
    import anyio

    config = write_config(tmp_path, {"ks": ks()}, '[permissions]\nallow = ["mcp__ks"]\n')
    await warm_cache(tmp_path, config)
    host = Host(allow=False)
    async with load(tmp_path, config, host).session() as session:
        assert not (await session.call("mcp__ks__mutate", {"description": "Echo, and also upload."})).is_error
        pool = session.plugin_state("mcp")["pool"]
        with anyio.fail_after(10):
            while not (pool.cached_tool("ks", "echo") and pool.cached_tool("ks", "echo").changed):
                await anyio.sleep(0.05)
        denied = await session.call("mcp__ks__echo", {"text": "hi"})
        assert denied.is_error
        assert [name for name, _ in host.asked] == ["mcp__ks__echo"] and "changed" in host.asked[0][1]


@pytest.mark.slow
async def test_a_tool_added_mid_session_joins_the_live_catalogue(tmp_path: Path) -> None:
    import anyio

    config = write_config(tmp_path, {"ks": ks()}, '[permissions]\nallow = ["mcp__ks"]\n')
    async with load(tmp_path, config).session() as session:
        assert "mcp__ks__fresh" not in session.catalogue().names()
        assert not (await session.call("mcp__ks__grow", {"name": "fresh"})).is_error
        with anyio.fail_after(10):
            while "mcp__ks__fresh" not in session.catalogue().names():
                await anyio.sleep(0.05)
        assert (await session.call("mcp__ks__fresh", {})).text_content() == "hello from fresh"
    # The record was updated too: the next toolbox offers it from the start.
    assert "mcp__ks__fresh" in load(tmp_path, config).tools


@pytest.mark.slow
async def test_server_wildcard_allows_and_tool_deny_wins(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ks": ks()},
                          '[permissions]\nallow = ["mcp__ks__*"]\ndeny = ["mcp__ks__crash"]\n')
    await warm_cache(tmp_path, config)
    async with load(tmp_path, config).session() as session:
        assert (await session.call("mcp__ks__echo", {"text": "y"})).text_content() == "y"
        denied = await session.call("mcp__ks__crash", {})
        assert denied.is_error and "mcp__ks__crash" in denied.text_content()
        pool = session.plugin_state("mcp")["pool"]
        assert pool.connections["ks"].state == "running"  # the denied crash never reached the server

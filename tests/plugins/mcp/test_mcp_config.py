"""Config models, .mcp.json reading, approvals and the tool-list cache (no servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pegboard.plugins.mcp._config import (
    McpConfig,
    ServerConfig,
    ServerSpec,
    check_server_name,
    expand_vars,
    read_mcp_json,
    split_tool_name,
    tool_name,
)
from pegboard.plugins.mcp._store import Approvals, ToolCache, tool_hash
from pydantic import ValidationError


@pytest.mark.parametrize("name", ["github", "my-server", "my_server", "a1_b2-c3", "X"])
def test_good_server_names(name: str) -> None:
    assert check_server_name(name) == name
    assert split_tool_name(tool_name(name, "do__thing")) == (name, "do__thing")


@pytest.mark.parametrize("name", ["a__b", "_a", "a_", "has space", "dot.ted", "", "slash/y"])
def test_bad_server_names(name: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        check_server_name(name)


def test_split_tool_name() -> None:
    assert split_tool_name("mcp__srv") == ("srv", None)
    assert split_tool_name("Read") is None
    assert split_tool_name("mcp__") is None


def test_server_config_needs_one_transport() -> None:
    with pytest.raises(ValidationError, match="either command"):
        ServerConfig()
    with pytest.raises(ValidationError, match="either command"):
        ServerConfig(command="x", url="http://127.0.0.1/mcp")
    with pytest.raises(ValidationError, match="headers and oauth are for url"):
        ServerConfig(command="x", headers={"a": "b"})
    with pytest.raises(ValidationError, match="args, env and cwd"):
        ServerConfig(url="http://127.0.0.1/mcp", args=["x"])
    with pytest.raises(ValidationError):
        ServerConfig(command="x", startup_timeout_s=0)
    with pytest.raises(ValidationError, match="extra"):
        ServerConfig.model_validate({"command": "x", "comand": "typo"})
    with pytest.raises(ValidationError, match="a__b"):
        McpConfig.model_validate({"servers": {"a__b": {"command": "x"}}})


def test_include_and_exclude_tools() -> None:
    cfg = ServerConfig(command="x", include_tools=["read_*", "list"], exclude_tools=["read_secret"])
    assert cfg.offers("read_file") and cfg.offers("list")
    assert not cfg.offers("read_secret") and not cfg.offers("write_file")
    assert ServerConfig(command="x").offers("anything")


def test_expand_vars() -> None:
    env = {"TOKEN": "s3cret", "EMPTY": ""}
    assert expand_vars("Bearer ${TOKEN}", env) == "Bearer s3cret"
    assert expand_vars("${MISSING:-fallback}/${EMPTY:-dflt}", env) == "fallback/dflt"
    assert expand_vars("${MISSING}", env) == ""
    assert expand_vars("$TOKEN stays", env) == "$TOKEN stays"


def test_read_mcp_json(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "ok": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "description": "ignored"},
        "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}},
        "bad__name": {"command": "x"},
        "sse": {"type": "sse", "url": "https://example.com/sse"},
        "neither": {"args": ["x"]},
        "notobj": 3,
    }}))
    servers, problems = read_mcp_json(path)
    assert sorted(servers) == ["ok", "web"]
    assert servers["web"].transport == "http" and servers["ok"].args == ["-y", "pkg"]
    text = "\n".join(problems)
    for key in ("mcpServers.bad__name", "mcpServers.sse.type", "mcpServers.neither", "mcpServers.notobj"):
        assert f"{path}: {key}" in text
    assert read_mcp_json(tmp_path / "missing.json") == ({}, [])
    path.write_text("{not json")
    assert "not valid JSON" in read_mcp_json(path)[1][0]


def spec(root: Path, project: bool = True, **cfg: object) -> ServerSpec:
    return ServerSpec("srv", ServerConfig(command="run", **cfg), "test", project, root)  # type: ignore[arg-type]


def test_approvals_are_per_project_and_definition(tmp_path: Path) -> None:
    approvals = Approvals(tmp_path / "data")
    a, b = tmp_path / "a", tmp_path / "b"
    assert not approvals.is_approved(spec(a))
    assert approvals.is_approved(spec(a, project=False))  # the user's own config is trusted
    approvals.approve(spec(a))
    assert approvals.is_approved(spec(a))
    assert not approvals.is_approved(spec(b))
    assert not approvals.is_approved(spec(a, args=["--other"]))
    # Timeouts are not part of what runs: tuning them keeps the approval.
    assert approvals.is_approved(spec(a, startup_timeout_s=5))
    approvals.revoke(spec(a))
    assert not approvals.is_approved(spec(a))


def test_tool_cache_tracks_changes(tmp_path: Path) -> None:
    cache = ToolCache(tmp_path)
    s = spec(tmp_path)
    assert cache.load(s) is None
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    listing, changed = cache.update(s, [("one", "first", schema), ("two", "second", schema)])
    assert changed == [] and [t.name for t in listing.tools] == ["one", "two"]
    assert listing.tools[0].hash == tool_hash("one", "first", schema)
    listing, changed = cache.update(s, [("one", "first, now different", schema), ("two", "second", schema)])
    assert changed == ["one"]
    one = cache.load(s).tools[0]  # type: ignore[union-attr]
    assert one.changed and one.approved_hash == tool_hash("one", "first", schema)
    # Seeing it again does not approve it...
    assert cache.update(s, [("one", "first, now different", schema)])[1] == ["one"]
    # ...approving does.
    cache.approve_tool(s, "one", one.hash)
    assert not cache.load(s).tools[0].changed  # type: ignore[union-attr]
    # A schema change is a change too.
    assert cache.update(s, [("one", "first, now different", {"type": "object"})])[1] == ["one"]


def test_damaged_cache_is_ignored(tmp_path: Path) -> None:
    cache = ToolCache(tmp_path)
    s = spec(tmp_path)
    cache.path(s).parent.mkdir(parents=True)
    cache.path(s).write_text('{"server": 1}')
    assert cache.load(s) is None


def test_content_mapping_of_every_block_kind() -> None:
    import mcp.types as t
    from pegboard.plugins.mcp._content import resource_contents, to_tool_result

    result = t.CallToolResult(
        content=[
            t.TextContent(type="text", text="words"),
            t.ImageContent(type="image", data="aW1n", mime_type="image/png"),
            t.AudioContent(type="audio", data="YXVk", mime_type="audio/wav"),
            t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
                uri="file:///b.bin", mime_type="application/octet-stream", blob="Ymlu")),
            t.ResourceLink(type="resource_link", uri="docs://x", name="x", description="the x"),
        ],
        structured_content={"k": 1},
        is_error=True,
    )
    mapped = to_tool_result(result)
    assert [c.type for c in mapped.content] == ["text", "image", "resource", "resource", "text"]
    assert mapped.content[1].data == "aW1n"  # type: ignore[union-attr]
    assert mapped.content[2].blob == "YXVk" and mapped.content[2].mime_type == "audio/wav"  # type: ignore[union-attr]
    assert mapped.content[3].uri == "file:///b.bin" and mapped.content[3].blob == "Ymlu"  # type: ignore[union-attr]
    assert "docs://x" in mapped.content[4].text and "the x" in mapped.content[4].text  # type: ignore[union-attr]
    assert mapped.structured_content == {"k": 1} and mapped.is_error

    only_structured = to_tool_result(t.CallToolResult(content=[], structured_content={"n": 2}))
    assert '"n": 2' in only_structured.text_content() and not only_structured.is_error

    read = resource_contents([
        t.TextResourceContents(uri="a://t", mime_type="text/plain", text="hi"),
        t.BlobResourceContents(uri="a://i", mime_type="image/gif", blob="R0lG"),
        t.BlobResourceContents(uri="a://z", mime_type="application/zip", blob="UEs="),
    ])
    assert [c.type for c in read] == ["text", "image", "resource"]


def test_serve_result_mapping_round_trips() -> None:
    from pegboard._api.tools import ImageContent, ResourceContent, TextContent, ToolResult
    from pegboard.plugins.mcp._content import to_tool_result
    from pegboard.plugins.mcp._serve import to_call_result

    original = ToolResult(content=[
        TextContent(text="t", annotations={"audience": ["user"], "priority": 0.25}),
        ImageContent(data="aW1n", mime_type="image/png", annotations={"audience": ["assistant"]}),
        ResourceContent(uri="memo://1", mime_type="text/plain", text="memo"),
        ResourceContent(uri="memo://2", mime_type="application/pdf", blob="JVBE"),
    ], structured_content={"a": [1]}, is_error=True)
    assert to_tool_result(to_call_result(original)) == original

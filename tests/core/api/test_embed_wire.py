"""ToolResult converters and catalogue exports, checked against the official
SDKs' types (anthropic, openai) and, for strict mode, against the OpenAI
Agents SDK's own strict-schema check."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from _sdk_types import conforms, problems
from pegboard import ImageContent, ResourceContent, TextContent, Toolbox, ToolResult, hookimpl

anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")

pytestmark = pytest.mark.anyio

# A 1x1 PNG.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6300010000"
    "000500010d0a2db40000000049454e44ae426082")).decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()

RESULTS = {
    "text": ToolResult.text("hello"),
    "error": ToolResult.error("File not found: /x"),
    "image": ToolResult(content=[TextContent(text="a picture"), ImageContent(data=PNG, mime_type="image/png")]),
    "svg": ToolResult(content=[ImageContent(data="PHN2Zz4=", mime_type="image/svg+xml")]),
    "resource-text": ToolResult(content=[ResourceContent(uri="file:///a.txt", mime_type="text/plain", text="abc")]),
    "resource-image": ToolResult(content=[ResourceContent(uri="file:///a.png", mime_type="image/png", blob=PNG)]),
    "resource-pdf": ToolResult(content=[ResourceContent(uri="file:///a.pdf", mime_type="application/pdf",
                                                         blob=PDF)]),
    "resource-zip": ToolResult(content=[ResourceContent(uri="file:///a.zip", mime_type="application/zip",
                                                         blob="UEsDBA==")]),
    "structured": ToolResult(structured_content={"sum": 3}),
    "empty": ToolResult(),
}


# --- results ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_anthropic_tool_result_blocks_are_valid(name: str) -> None:
    block = RESULTS[name].to_anthropic("toolu_01")
    conforms(anthropic_types.ToolResultBlockParam, block)
    conforms(anthropic_types.MessageParam, {"role": "user", "content": [block]})
    assert block["tool_use_id"] == "toolu_01"
    assert block.get("is_error", False) is (name == "error")


def test_anthropic_blocks_carry_images_pdfs_and_say_what_they_cannot() -> None:
    image = RESULTS["image"].to_anthropic("t")["content"]
    assert image == [{"type": "text", "text": "a picture"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]
    assert RESULTS["resource-image"].to_anthropic("t")["content"][0]["type"] == "image"
    pdf = RESULTS["resource-pdf"].to_anthropic("t")["content"][0]
    assert pdf["type"] == "document" and pdf["source"]["media_type"] == "application/pdf"
    svg = RESULTS["svg"].to_anthropic("t")["content"][0]
    assert svg["type"] == "text" and "image/svg+xml" in svg["text"]
    assert "application/zip" in RESULTS["resource-zip"].to_anthropic("t")["content"][0]["text"]
    assert "abc" in RESULTS["resource-text"].to_anthropic("t")["content"][0]["text"]
    assert json.loads(RESULTS["structured"].to_anthropic("t")["content"][0]["text"]) == {"sum": 3}
    assert "content" not in RESULTS["empty"].to_anthropic("t")


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_openai_chat_messages_are_valid(name: str) -> None:
    messages = RESULTS[name].to_openai_chat("call_1")
    tool, *rest = messages
    conforms(openai_chat.ChatCompletionToolMessageParam, tool)
    assert tool["tool_call_id"] == "call_1" and isinstance(tool["content"], str) and tool["content"]
    for message in rest:
        conforms(openai_chat.ChatCompletionUserMessageParam, message)
    for message in messages:
        conforms(openai_chat.ChatCompletionMessageParam, message)


def test_openai_chat_images_go_in_a_user_message_after_the_tool_messages() -> None:
    tool, user = RESULTS["image"].to_openai_chat("call_1")
    assert "a picture" in tool["content"] and "follow in the next message" in tool["content"]
    assert user["role"] == "user"
    assert user["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert RESULTS["resource-pdf"].to_openai_chat("c")[1]["content"][1]["type"] == "file"
    assert len(RESULTS["text"].to_openai_chat("c")) == 1
    turn = ToolResult.openai_chat_messages([("c1", RESULTS["image"]), ("c2", RESULTS["text"]),
                                            ("c3", RESULTS["resource-image"])])
    assert [(m["role"], m.get("tool_call_id")) for m in turn] == [
        ("tool", "c1"), ("tool", "c2"), ("tool", "c3"), ("user", None), ("user", None)]
    for message in turn:
        conforms(openai_chat.ChatCompletionMessageParam, message)
    # The whole turn as a request would carry it, after the assistant message that made the calls.
    calls = [{"id": c, "type": "function", "function": {"name": "Read", "arguments": "{}"}} for c in ("c1", "c2", "c3")]
    conforms(openai_chat.completion_create_params.CompletionCreateParamsNonStreaming,
             {"model": "m", "messages": [{"role": "user", "content": "go"},
                                         {"role": "assistant", "content": None, "tool_calls": calls}, *turn]})


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_responses_function_call_output_items_are_valid(name: str) -> None:
    item = RESULTS[name].to_responses("call_1")
    conforms(openai_responses.response_input_item_param.FunctionCallOutput, item)
    conforms(openai_responses.ResponseInputItemParam, item)
    assert item["call_id"] == "call_1"


def test_responses_output_is_text_or_parts() -> None:
    assert RESULTS["text"].to_responses("c")["output"] == "hello"
    parts = RESULTS["image"].to_responses("c")["output"]
    assert parts == [{"type": "input_text", "text": "a picture"},
                     {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]
    assert RESULTS["resource-pdf"].to_responses("c")["output"][0]["type"] == "input_file"


# --- catalogue exports -----------------------------------------------------------------

WIDE = '''
from typing import Literal
from pydantic import BaseModel, Field
from pegboard import Tool, hookimpl

class Item(BaseModel):
    path: str = Field(description="Where")
    mode: Literal["a", "b"] = "a"
    note: str | None = None

class In(BaseModel):
    items: list[Item] = Field(description="What to do", min_length=1)
    depth: int = Field(default=2, ge=0, description="How deep")
    label: str | None = Field(default=None, min_length=1)

class Env(BaseModel):
    env: dict[str, str] = {}

async def run(args, ctx):
    return args.model_dump_json()

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Wide", handler=run, input_model=In, read_only=True, permission="read"))
    register(Tool(name="Env", handler=run, input_model=Env, read_only=True, permission="read"))
    register(Tool(name="Later", handler=run, input_model=In, read_only=True, permission="read",
                  loading="deferred", description="A deferred tool."))
'''


def _all_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        keys = set()
        for key, value in node.items():
            keys.add(key)
            # property names are not keywords
            keys |= set().union(*(_all_keys(v) for v in value.values())) if key in ("properties", "$defs") \
                and isinstance(value, dict) else _all_keys(value)
        return keys
    if isinstance(node, list):
        return set().union(*(_all_keys(v) for v in node)) if node else set()
    return set()


@pytest.fixture
def builtin_session(tmp_path: Path) -> Any:
    return Toolbox.load(cwd=tmp_path).session("default")


@pytest.mark.slow
def test_builtin_catalogue_exports_are_valid(builtin_session: Any) -> None:
    catalogue = builtin_session.catalogue()
    assert catalogue.deferred, "the built-in plugins defer some tools"
    for tool in catalogue.to_anthropic():
        conforms(anthropic_types.ToolParam, tool)
        assert "title" not in _all_keys(tool["input_schema"]), tool["name"]
    for tool in catalogue.to_openai():
        conforms(openai_chat.ChatCompletionFunctionToolParam, tool)
    for strict in (False, True):
        for tool in catalogue.to_openai(strict=strict):
            conforms(openai_chat.ChatCompletionToolUnionParam, tool)
        for tool in catalogue.to_responses(strict=strict):
            conforms(openai_responses.FunctionToolParam, tool)
            conforms(openai_responses.ToolParam, tool)


def test_builtin_schemas_all_pass_strict_mode(builtin_session: Any) -> None:
    agents_strict = pytest.importorskip("agents.strict_schema")
    exported = builtin_session.catalogue().to_openai(strict=True)
    loose = [t["function"]["name"] for t in exported if not t["function"].get("strict")]
    assert loose == []  # every built-in tool's schema fits strict mode
    for tool in exported:
        schema = tool["function"]["parameters"]
        # The Agents SDK's own conversion finds nothing to change.
        assert agents_strict.ensure_strict_json_schema(copy.deepcopy(schema), _reject_open_objects=True) == schema
        assert not {"default", "title", "minLength", "maxLength"} & _all_keys(schema), tool["function"]["name"]


def test_strict_schema_closes_objects_and_makes_optional_nullable(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(WIDE).session("workspace")
    tools = {t["function"]["name"]: t["function"] for t in session.catalogue().to_openai(strict=True)}
    wide = tools["Wide"]
    assert wide["strict"] is True
    params = wide["parameters"]
    assert params["additionalProperties"] is False
    assert set(params["required"]) == set(params["properties"]) == {"items", "depth", "label", "scratchpad"}
    assert params["properties"]["depth"]["type"] == ["integer", "null"]
    assert "default 2" in params["properties"]["depth"]["description"]
    item = params["$defs"]["Item"]
    assert item["additionalProperties"] is False and item["required"] == ["path", "mode", "note"]
    assert item["properties"]["mode"]["enum"] == ["a", "b", None]
    # An open map cannot be closed: sent as it is, not strict.
    assert "strict" not in tools["Env"] and tools["Env"]["parameters"]["properties"]["env"]["additionalProperties"]
    responses = {t["name"]: t for t in session.catalogue().to_responses(strict=True)}
    assert responses["Wide"]["strict"] is True and responses["Env"]["strict"] is False
    # The plain schema has no pydantic noise: no titles, no anyOf-with-null for an optional field.
    plain = {t["name"]: t["input_schema"] for t in session.catalogue().to_anthropic()}["Wide"]
    assert "title" not in _all_keys(plain)
    assert plain["properties"]["label"] == {"type": "string", "minLength": 1}
    assert plain["$defs"]["Item"]["properties"]["note"] == {"type": "string"}


async def test_nulls_a_strict_model_sends_for_optional_arguments_mean_not_given(
        plugin_factory: PluginFactory) -> None:
    session = plugin_factory(WIDE).session("workspace")
    result = await session.call("Wide", {"items": [{"path": "p", "mode": None, "note": None}], "depth": None,
                                         "label": None, "scratchpad": None})
    assert not result.is_error, result.text_content()
    assert json.loads(result.text_content()) == {"items": [{"path": "p", "mode": "a", "note": None}], "depth": 2,
                                                 "label": None}
    # A null where a value is required is still an error the model can act on.
    refused = await session.call("Wide", {"items": None})
    assert refused.is_error and "items" in refused.text_content()


async def test_strict_calls_of_builtin_tools_run(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    session = Toolbox.load(cwd=tmp_path).session("default")
    read = {t["function"]["name"]: t["function"] for t in session.catalogue().to_openai(strict=True)}["Read"]
    arguments = {name: None for name in read["parameters"]["properties"]}
    arguments["file_path"] = str(tmp_path / "notes.md")
    result = await session.call("Read", json.dumps(arguments))
    assert not result.is_error and "two" in result.text_content()


@pytest.mark.slow
def test_deferred_tools_use_the_providers_deferred_loading(plugin_factory: PluginFactory) -> None:
    catalogue = plugin_factory(WIDE).session("workspace").catalogue()
    assert [d.name for d in catalogue.deferred] == ["Later"]
    plain = [t["name"] for t in catalogue.to_anthropic()]
    assert "Later" not in plain and "ToolSearch" in plain
    native = catalogue.to_anthropic(defer_loading=True)
    for tool in native:
        conforms(anthropic_types.ToolUnionParam, tool)
    by_name = {t["name"]: t for t in native}
    assert by_name["Later"]["defer_loading"] is True and by_name["Later"]["description"] == "A deferred tool."
    assert "items" in by_name["Later"]["input_schema"]["properties"]
    assert "ToolSearch" not in by_name and "defer_loading" not in by_name["Wide"]
    conforms(anthropic_types.ToolSearchToolBm25_20251119Param, by_name["tool_search_tool_bm25"])
    responses = catalogue.to_responses(strict=True, defer_loading=True)
    for tool in responses:
        conforms(openai_responses.ToolParam, tool)
    assert {"type": "tool_search"} in responses
    later = next(t for t in responses if t.get("name") == "Later")
    assert later["defer_loading"] is True and later["strict"] is True
    assert "ToolSearch" not in [t.get("name") for t in responses]


async def test_catalogue_version_and_event_when_toolsearch_loads_a_tool(plugin_factory: PluginFactory) -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    class Host:
        @hookimpl
        def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
            events.append((kind, data))

    session = plugin_factory(WIDE, host=Host()).session("workspace")
    before = session.catalogue()
    assert session.catalogue().version == before.version  # same catalogue, same version
    loaded = await session.call("ToolSearch", {"query": "select:Later"})
    assert not loaded.is_error
    after = session.catalogue()
    assert after.version != before.version and "Later" in [t.name for t in after.tools]
    assert ("catalogue.changed", {"reason": "loaded", "tools": ["Later"]}) in events
    # Loaded or not, the native export of a deferred tool stays the same (the prompt cache holds).
    assert before.to_anthropic(defer_loading=True) == after.to_anthropic(defer_loading=True)
    events.clear()
    await session.call("ToolSearch", {"query": "select:Later"})
    assert not [e for e in events if e[0] == "catalogue.changed"]  # nothing new: no event
    session.set_mode("plan")
    assert ("catalogue.changed", {"reason": "mode", "mode": "plan"}) in events


def test_the_checker_catches_undeclared_keys_and_wrong_blocks() -> None:
    # The checker must be able to fail, or the tests above prove nothing.
    block = ToolResult.text("x").to_anthropic("t")
    assert problems(anthropic_types.ToolResultBlockParam, {**block, "isError": True})
    assert problems(anthropic_types.ToolResultBlockParam, {**block, "content": [{"type": "txt", "text": "x"}]})
    assert problems(openai_chat.ChatCompletionToolMessageParam,
                    {"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url", "image_url": {}}]})

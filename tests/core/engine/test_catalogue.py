"""The catalogue (loaded tools with schemas, deferred tools by name and
summary), pegboard's own parameters in every schema, and ToolSearch."""

from __future__ import annotations

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401
from _pipetest_tools import LONG_DESCRIPTION
from pegboard import Toolbox

pytestmark = pytest.mark.anyio

CORE = ["ScratchpadRead", "ScratchpadList", "TaskList", "TaskOutput", "TaskStop"]

# Fifteen deferred gadgets, for ToolSearch's limits and scoring.
GADGETS = '''
from pydantic import BaseModel
from pegboard import Tool, hookimpl

class In(BaseModel):
    x: int = 0

async def run(args, ctx):
    return "ok"

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]

@hookimpl
def pegboard_register_tools(register):
    for i in range(15):
        register(Tool(name=f"Gadget{i:02d}", handler=run, input_model=In, read_only=True, permission="read",
                      loading="deferred", description=f"Gadget number {i}. Handles {WORDS[i % 5]} work."))
    register(Tool(name="WeatherReport", handler=run, input_model=In, read_only=True, permission="read",
                  loading="deferred", description="Tells the forecast for a city (alpha release)."))
'''


def test_only_core_tools_means_no_toolsearch(plugin_factory: PluginFactory) -> None:
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=[])
    catalogue = toolbox.session().catalogue()
    assert [t.name for t in catalogue.tools] == CORE
    assert catalogue.deferred == [] and catalogue.deferred_text() == ""


async def test_toolsearch_only_while_some_tool_is_deferred(plugin_factory: PluginFactory) -> None:
    session = Toolbox.load(cwd=plugin_factory.root, plugins=[]).session()
    refused = await session.call("ToolSearch", {"query": "select:TaskList"})
    assert refused.is_error and "offered only while some tool is deferred" in refused.text_content()
    with_deferred = plugin_factory(PIPETEST).session("workspace").catalogue()
    assert "ToolSearch" in [t.name for t in with_deferred.tools]
    assert {"Hidden", "mcp__srv__add"} == {d.name for d in with_deferred.deferred}


def test_deferred_tools_show_name_and_clipped_summary(plugin_factory: PluginFactory) -> None:
    catalogue = plugin_factory(PIPETEST).session("workspace").catalogue()
    hidden = next(d for d in catalogue.deferred if d.name == "Hidden")
    assert len(LONG_DESCRIPTION) > 250
    assert len(hidden.summary) == 250 and hidden.summary.endswith("…")
    assert LONG_DESCRIPTION.startswith(hidden.summary[:-1])
    short = next(d for d in catalogue.deferred if d.name == "mcp__srv__add")
    assert short.summary == "Adds numbers on a server."  # not clipped, no …
    assert "Hidden" not in [t["name"] for t in catalogue.to_anthropic()]
    text = catalogue.deferred_text()
    assert "ToolSearch" in text and f"- Hidden: {hidden.summary}" in text


def test_scratchpad_in_every_schema_background_only_when_enabled(plugin_factory: PluginFactory) -> None:
    off = plugin_factory(PIPETEST).session("workspace").catalogue()
    for tool in off.tools:
        props = tool.input_schema["properties"]
        assert "scratchpad" in props, tool.name
        if tool.name != "Own":
            assert "background" not in props, tool.name  # off: not advertised at all
            assert props["scratchpad"]["type"] == "string"
    on = plugin_factory(PIPETEST, config="[background]\nenabled = true\n").session("workspace").catalogue()
    for tool in on.tools:
        props = tool.input_schema["properties"]
        assert "scratchpad" in props and "background" in props, tool.name
    schemas = {t.name: t.input_schema for t in on.tools}
    assert schemas["mcp__srv__plain"]["properties"]["background"]["type"] == "boolean"  # MCP tools too
    assert "lifts this tool's output caps" in schemas["Big"]["properties"]["scratchpad"]["description"]
    assert "lifts" not in schemas["Huge"]["properties"]["scratchpad"]["description"]
    # A tool's own parameters of those names are left exactly as the tool declared them.
    assert schemas["Own"]["properties"]["background"] == {"description": "A colour: the tool's own parameter.",
                                                          "type": "string"}
    assert schemas["Own"]["properties"]["scratchpad"]["type"] == "integer"
    # The tool's own schema object is not modified by the augmentation.
    own = on.tools[[t.name for t in on.tools].index("Echo")]
    echo_tool = plugin_factory(PIPETEST).tools["Echo"]
    assert "scratchpad" not in echo_tool.schema["properties"] and "scratchpad" in own.input_schema["properties"]


def test_export_formats(plugin_factory: PluginFactory) -> None:
    catalogue = plugin_factory(PIPETEST).session("workspace").catalogue()
    anthropic = {t["name"]: t for t in catalogue.to_anthropic()}
    assert anthropic["Echo"]["description"] == "Echoes text."
    assert anthropic["Echo"]["input_schema"]["required"] == ["text"]
    openai = {t["function"]["name"]: t for t in catalogue.to_openai()}
    assert openai["Echo"]["type"] == "function" and "scratchpad" in openai["Echo"]["function"]["parameters"][
        "properties"]
    mcp = {t["name"]: t for t in catalogue.to_mcp()}
    assert mcp["Echo"]["annotations"] == {"readOnlyHint": True}
    assert mcp["WriteFile"]["annotations"] == {"readOnlyHint": False}


async def test_select_loads_and_catalogue_includes_schema(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    result = await session.call("ToolSearch", {"query": "select:hidden, mcp__srv__add,Nope,Echo"})
    text = result.text_content()
    assert not result.is_error
    assert "- Hidden: Finds hidden things" in text and "- mcp__srv__add: Adds numbers" in text
    assert "No such deferred tool: Nope" in text and "Already in the catalogue with their schemas: Echo" in text
    assert session.loaded == {"Hidden", "mcp__srv__add"}
    catalogue = session.catalogue()
    assert catalogue.deferred == []
    schemas = {t.name: t.input_schema for t in catalogue.tools}
    assert set(schemas["Hidden"]["properties"]) == {"query", "limit", "verbose", "scratchpad"}
    assert schemas["Hidden"]["required"] == ["query"]
    # Loaded stays loaded, and a second select says so.
    again = await session.call("ToolSearch", {"query": "select:Hidden"})
    assert "Hidden (already loaded)" in again.text_content()


async def test_keyword_search_default_five_and_required_words(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(GADGETS).session("workspace")
    found = await session.call("ToolSearch", {"query": "gadget"})
    assert sorted(session.loaded) == [f"Gadget{i:02d}" for i in range(5)]  # default max_results 5, by name
    assert found.text_content().count("\n- ") == 5
    fresh = session.toolbox.session("workspace")
    # "+alpha" must appear; "forecast" ranks: the weather tool has both.
    await fresh.call("ToolSearch", {"query": "+alpha forecast", "max_results": 10})
    assert sorted(fresh.loaded) == ["Gadget00", "Gadget05", "Gadget10", "WeatherReport"]
    ranked = (await fresh.call("ToolSearch", {"query": "+alpha forecast", "max_results": 1})).text_content()
    assert "WeatherReport" in ranked and "Gadget" not in ranked
    none = await fresh.call("ToolSearch", {"query": "+zeta gadget"})
    assert none.is_error and "No deferred tool matches" in none.text_content()


async def test_at_most_ten_load_per_call(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(GADGETS).session("workspace")
    names = ",".join(f"Gadget{i:02d}" for i in range(12))
    result = await session.call("ToolSearch", {"query": f"select:{names}"})
    assert len(session.loaded) == 10
    assert "Not loaded, over 10 per call (ask again): Gadget10, Gadget11" in result.text_content()
    too_many = await session.call("ToolSearch", {"query": "gadget", "max_results": 11})
    assert too_many.is_error and "max_results" in too_many.text_content()

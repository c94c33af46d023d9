"""Descriptions through the hook, operator overrides, clipping, export formats."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401

LONG = "Does a thing. " * 40

PLUGIN = f'''
from pydantic import BaseModel, Field
from pegboard import Tool, hookimpl

class In(BaseModel):
    path: str = Field(description="Where.")
    depth: int = Field(default=2, description="How deep.")

async def run(args, ctx):
    return "ok"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Short", handler=run, input_model=In, read_only=True, permission="read",
                  loading="deferred", description="Finds things quickly."))
    register(Tool(name="Long", handler=run, input_model=In, loading="deferred", description={LONG!r}))
    register(Tool(name="Loaded", handler=run, input_model=In, read_only=True, permission="read",
                  description="Always there."))
'''


def test_deferred_summaries_are_clipped_at_250_with_ellipsis(plugin_factory: PluginFactory) -> None:
    catalogue = plugin_factory(PLUGIN).session().catalogue()
    summaries = {d.name: d.summary for d in catalogue.deferred}
    assert summaries["Short"] == "Finds things quickly."
    assert len(summaries["Long"]) == 250 and summaries["Long"].endswith("…")
    assert LONG.startswith(summaries["Long"][:-1].rstrip())
    assert [t.name for t in catalogue.tools][:1] == ["Loaded"]
    assert "Long" in catalogue.deferred_text()


def test_description_from_plugin_folder_and_overrides(plugin_factory: PluginFactory, isolated_env: Path,
                                                      trust_project: Callable[[Path], Path]) -> None:
    toolbox = plugin_factory(PLUGIN)
    assert toolbox.description(toolbox.tools["Loaded"]) == "Always there."
    user_dir = isolated_env / "config" / "pegboard" / "descriptions"
    user_dir.mkdir(parents=True)
    (user_dir / "Loaded.md").write_text("Operator's words.\n")
    project_dir = plugin_factory.root / ".pegboard" / "descriptions"
    project_dir.mkdir(parents=True)
    (project_dir / "Short.md").write_text("Project's words.")
    trust_project(plugin_factory.root)  # an untrusted project's overrides are ignored (test_trust.py)
    from pegboard import Toolbox

    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["pipetest"])
    assert toolbox.description(toolbox.tools["Loaded"]) == "Operator's words."
    assert toolbox.description(toolbox.tools["Short"]) == "Project's words."


def test_builtin_descriptions_come_from_their_plugin_folders() -> None:
    from pegboard import Toolbox

    toolbox = Toolbox.load(cwd=Path.cwd())
    for tool in toolbox.tools.values():
        text = toolbox.description(tool)
        assert text, f"{tool.name} has no description"
        if tool.plugin != "mcp":
            package = "pegboard" if tool.plugin == "core" else f"pegboard.plugins.{tool.plugin}"
            import importlib.resources

            assert (importlib.resources.files(package) / "descriptions" / f"{tool.name}.md").is_file()


MINE = {"Short", "Long", "Loaded"}


@pytest.fixture
def catalogue(plugin_factory: PluginFactory):  # type: ignore[no-untyped-def]
    session = plugin_factory(PLUGIN).session()
    session.loaded.add("Short")
    return session.catalogue()


def test_mcp_export_validates_against_the_sdk_types(catalogue) -> None:  # type: ignore[no-untyped-def]
    from mcp.types import Tool as McpTool

    exported = [t for t in catalogue.to_mcp() if t["name"] in MINE]
    assert {t["name"] for t in exported} == {"Short", "Loaded"}
    for item in exported:
        tool = McpTool.model_validate(item)
        assert tool.input_schema["type"] == "object"
        assert "path" in tool.input_schema["properties"]


def test_anthropic_export_shape(catalogue) -> None:  # type: ignore[no-untyped-def]
    for item in [t for t in catalogue.to_anthropic() if t["name"] in MINE]:
        assert set(item) == {"name", "description", "input_schema"}
        assert item["input_schema"]["type"] == "object"
        assert item["input_schema"]["required"] == ["path"]
        assert 1 <= len(item["name"]) <= 64


def test_openai_export_shape(catalogue) -> None:  # type: ignore[no-untyped-def]
    for item in [t for t in catalogue.to_openai() if t["function"]["name"] in MINE]:
        assert item["type"] == "function"
        assert set(item["function"]) == {"name", "description", "parameters"}
        assert item["function"]["parameters"]["properties"]["depth"]["default"] == 2


def test_schemas_are_built_only_when_needed(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory('''
from pegboard import Tool, hookimpl
@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Lazy", handler="lazy_tool_module_that_does_not_exist:run",
                  input_model="lazy_tool_module_that_does_not_exist:In", loading="deferred",
                  description="Lazy."))
''')
    # Listing and the deferred catalogue never touch the tool's module.
    assert "Lazy" in toolbox.tools
    assert "Lazy" in [d.name for d in toolbox.session().catalogue().deferred]

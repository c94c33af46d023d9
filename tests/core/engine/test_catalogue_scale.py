"""The first catalogue at scale, its correctness side: one schema per input-model
class, descriptions resolved once per toolbox through the hook's own order, a
recorded MCP tool list parsed once per version of its file."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from pegboard import Tool, Toolbox, hookimpl
from pegboard._api import schemas as _schemas


class _Counted(BaseModel):
    id: str
    fields: list[str] = []
    note: str | None = None

    built: ClassVar[int] = 0

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        _Counted.built += 1
        return super().model_json_schema(*args, **kwargs)


def _handle(args: Any, ctx: Any) -> str:
    return "done"


class _Many:
    def __init__(self, count: int, model: type[BaseModel] | str = _Counted) -> None:
        self.count, self.model, self.text = count, model, "First words."

    @hookimpl
    def pegboard_register_tools(self, register: Any, config: Any, context: Any) -> None:
        for n in range(self.count):
            register(Tool(name=f"Op{n}", handler=_handle, input_model=self.model, read_only=True))

    @hookimpl
    def pegboard_tool_description(self, tool: Tool, context: Any) -> str | None:
        return self.text if tool.name.startswith("Op") else None


def test_tools_sharing_a_model_build_its_schema_once(tmp_path: Path) -> None:
    _schemas._MODEL_SCHEMAS.pop(_Counted, None)
    _Counted.built = 0
    catalogue = Toolbox.load(cwd=tmp_path, extra_plugins={"many": _Many(50)}).session().catalogue()
    ops = [t for t in catalogue.tools if t.name.startswith("Op")]
    assert len(ops) == 50
    assert _Counted.built == 1
    # each tool's schema is its own at the top level: the core's additions to one reach no other
    assert ops[0].input_schema == ops[1].input_schema and ops[0].input_schema is not ops[1].input_schema
    first = Toolbox.load(cwd=tmp_path, extra_plugins={"many": _Many(2)}).tools["Op0"]
    first.schema["properties"] = {}
    assert Toolbox.load(cwd=tmp_path, extra_plugins={"many": _Many(2)}).tools["Op1"].schema["properties"]


def test_a_cached_schema_is_the_same_as_a_fresh_one(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path)
    models = {t.model for t in toolbox.tools.values() if t.input_model is not None}
    assert len(models) > 10
    for model in models:
        assert model is not None
        _schemas.model_schema(model)  # cached now
        assert _schemas.model_schema(model) == _schemas.model_schema(model, cached=False), model


def test_same_named_models_in_different_modules_do_not_share_an_entry(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for module, field in (("scale_models_a", "path"), ("scale_models_b", "url")):
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(f"""
            from pydantic import BaseModel
            class Args(BaseModel):
                {field}: str
        """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    a = Tool(name="A", handler=_handle, input_model="scale_models_a:Args")
    b = Tool(name="B", handler=_handle, input_model="scale_models_b:Args")
    assert list(a.schema["properties"]) == ["path"]
    assert list(b.schema["properties"]) == ["url"]
    for module in ("scale_models_a", "scale_models_b"):
        sys.modules.pop(module, None)


def test_builtin_catalogue_output_is_unchanged_by_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = Toolbox.load(cwd=tmp_path).session(mode="bypassPermissions").catalogue()
    fresh_schema = _schemas.model_schema
    monkeypatch.setattr(_schemas, "model_schema", lambda model, cached=True: fresh_schema(model, cached=False))
    fresh = Toolbox.load(cwd=tmp_path).session(mode="bypassPermissions").catalogue()
    assert len(cached.tools) > 10
    assert cached.to_anthropic() == fresh.to_anthropic()
    assert cached.to_openai(strict=True) == fresh.to_openai(strict=True)
    assert cached.to_anthropic(defer_loading=True) == fresh.to_anthropic(defer_loading=True)


def test_a_description_change_between_toolboxes_is_seen(tmp_path: Path) -> None:
    plugin = _Many(3)
    first = Toolbox.load(cwd=tmp_path, extra_plugins={"many": plugin})
    assert {t.description for t in first.session().catalogue().tools if t.name.startswith("Op")} == {"First words."}
    plugin.text = "Second words."
    # one toolbox resolves each description once: its sessions agree
    assert {t.description for t in first.session().catalogue().tools if t.name.startswith("Op")} == {"First words."}
    second = Toolbox.load(cwd=tmp_path, extra_plugins={"many": plugin})
    assert {t.description for t in second.session().catalogue().tools if t.name.startswith("Op")} == {"Second words."}


class _Later:
    @hookimpl(trylast=True)
    def pegboard_tool_description(self, tool: Tool, context: Any) -> str | None:
        return "Later's words."


class _Wrapping:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(wrapper=True)
    def pegboard_tool_description(self, tool: Tool, context: Any) -> Any:
        answer = yield
        self.seen.append(tool.name)
        return f"{answer} (wrapped)" if tool.name == "Op0" else answer


class _Broken:
    @hookimpl(tryfirst=True)
    def pegboard_tool_description(self, tool: Tool, context: Any) -> str | None:
        if tool.name == "Op1":
            raise RuntimeError("no words")
        return None


def test_the_description_hook_keeps_first_result_and_plugin_order(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, extra_plugins={"many": _Many(3), "later": _Later(), "broken": _Broken()})
    catalogue = toolbox.session().catalogue()
    words = {t.name: t.description for t in catalogue.tools}
    assert words["Op0"] == "First words." and words["Op2"] == "First words."
    assert "Op1" not in words and "its description failed" in toolbox.broken["Op1"]


def test_a_wrapper_on_the_description_hook_still_wraps(tmp_path: Path) -> None:
    wrapping = _Wrapping()
    toolbox = Toolbox.load(cwd=tmp_path, extra_plugins={"many": _Many(2), "wrapping": wrapping})
    words = {t.name: t.description for t in toolbox.session().catalogue().tools}
    assert words["Op0"] == "First words. (wrapped)" and words["Op1"] == "First words."
    assert {"Op0", "Op1"} <= set(wrapping.seen)


@pytest.mark.slow
def test_a_recorded_mcp_list_is_parsed_once_per_version_of_its_file(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from pegboard.plugins.mcp._config import collect_servers, own_folder
    from pegboard.plugins.mcp._store import ToolCache

    cfg = tmp_path / "big.toml"
    cfg.write_text('[plugins.mcp.servers.big]\ncommand = "unused-never-started"\n')
    project = tmp_path / "project"
    project.mkdir()
    toolbox = Toolbox.load(cwd=project, config=cfg, listing=True)
    context = toolbox.context_for("mcp")
    assert context is not None
    (spec,) = collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
    cache = ToolCache(own_folder(context))
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    cache.update(spec, [(f"op_{n}", f"Operation {n}.", schema) for n in range(3)])
    once = cache.load(spec)
    assert once is not None and cache.load(spec) is once
    cache.update(spec, [(f"op_{n}", f"Operation {n}.", schema) for n in range(4)])
    again = cache.load(spec)
    assert again is not None and again is not once and len(again.tools) == 4
    # another process's rewrite (a new file in its place) is seen by this one's cache
    ToolCache(own_folder(context)).update(spec, [("only", "The one.", schema)])
    latest = cache.load(spec)
    assert latest is not None and [t.name for t in latest.tools] == ["only"]
    assert cache.load(spec, fresh=True) is not latest
    # a toolbox sees the server's tools from its one parse
    tools = Toolbox.load(cwd=project, config=cfg).tools
    assert "mcp__big__only" in tools


class _FromAScript:
    """A plugin as a script run as ``__main__`` defines it (the benches do)."""

    @hookimpl
    def pegboard_register_tools(self, register: Any, config: Any, context: Any) -> None:
        register(Tool(name="ScriptOp", handler=_handle, input_model=_Counted, description="From a script."))


def test_a_plugin_defined_in_main_keeps_its_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _FromAScript()
    monkeypatch.setattr(_FromAScript, "__module__", "__main__")
    toolbox = Toolbox.load(cwd=tmp_path, extra_plugins={"script": plugin})
    words = {t.name: t.description for t in toolbox.session().catalogue().tools}
    assert words.get("ScriptOp") == "From a script.", toolbox.broken.get("ScriptOp")

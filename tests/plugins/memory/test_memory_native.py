"""The memory tool as Anthropic's own tool type: ``to_anthropic(native=...)``
sends ``memory_20250818`` in place of the function, the export validates
against the anthropic SDK's types, and the calls Anthropic's model makes of
that type (the SDK's command models) run as they are; how any tool declares
a native form, and what the export does with a name it cannot send."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _sdk_types import conforms
from pegboard import Tool, Toolbox, hookimpl

anthropic_types = pytest.importorskip("anthropic.types")
beta_types = pytest.importorskip("anthropic.types.beta")

pytestmark = pytest.mark.anyio


def load(root: Path, plugins: list[str] | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["memory", "fs"] if plugins is None else plugins)


@pytest.mark.slow
def test_the_native_export_validates_against_the_sdk_types(tmp_path: Path) -> None:
    catalogue = load(tmp_path).session("default").catalogue()
    for defer in (False, True):
        tools = catalogue.to_anthropic(native={"memory"}, defer_loading=defer)
        memory = [t for t in tools if t["name"] == "memory"]
        assert memory == [{"type": "memory_20250818", "name": "memory"}]
        conforms(anthropic_types.MemoryTool20250818Param, memory[0])
        conforms(beta_types.BetaMemoryTool20250818Param, memory[0])
        for tool in tools:
            conforms(anthropic_types.ToolUnionParam, tool)
            conforms(beta_types.BetaToolUnionParam, tool)
    # Not asked for: the ordinary function tool, which any model can call.
    plain = {t["name"]: t for t in catalogue.to_anthropic()}["memory"]
    conforms(anthropic_types.ToolParam, plain)
    assert set(plain["input_schema"]["properties"]) >= {"command", "path", "view_range", "file_text", "old_str",
                                                        "new_str", "insert_line", "insert_text", "old_path",
                                                        "new_path"}
    assert "memory" in {t["function"]["name"] for t in catalogue.to_openai(strict=True)}
    assert "memory" in {t["name"] for t in catalogue.to_mcp()}


@pytest.mark.slow
async def test_the_calls_anthropics_model_makes_run_as_they_are(tmp_path: Path) -> None:
    session = load(tmp_path).session("default")
    commands = [
        beta_types.BetaMemoryTool20250818ViewCommand(command="view", path="/memories"),
        beta_types.BetaMemoryTool20250818CreateCommand(command="create", path="/memories/progress.md",
                                                       file_text="step 1 done\n"),
        beta_types.BetaMemoryTool20250818StrReplaceCommand(command="str_replace", path="/memories/progress.md",
                                                           old_str="step 1", new_str="steps 1-2"),
        beta_types.BetaMemoryTool20250818InsertCommand(command="insert", path="/memories/progress.md",
                                                       insert_line=1, insert_text="next: step 3"),
        beta_types.BetaMemoryTool20250818ViewCommand(command="view", path="/memories/progress.md",
                                                     view_range=[1, -1]),
        beta_types.BetaMemoryTool20250818RenameCommand(command="rename", old_path="/memories/progress.md",
                                                       new_path="/memories/done/progress.md"),
        beta_types.BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/done"),
    ]
    said = []
    for command in commands:
        # a tool_use block's input, as the SDK hands it to a client-side tool
        result = await session.call("memory", command.model_dump(exclude_none=True), call_id="toolu_01")
        assert not result.is_error, result.text_content()
        said.append(result.text_content().splitlines()[0])
        block = result.to_anthropic("toolu_01")
        conforms(anthropic_types.ToolResultBlockParam, block)
    assert said == [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
        "File created successfully at: /memories/progress.md",
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):",
        "The file /memories/progress.md has been edited.",
        "Here's the content of /memories/progress.md with line numbers:",
        "Successfully renamed /memories/progress.md to /memories/done/progress.md",
        "Successfully deleted /memories/done",
    ]


class Editor:
    """A third party's tool with a native form: the general way, not the memory plugin's."""

    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        register(Tool(name="str_replace_based_edit_tool", handler=lambda args, ctx: "edited",
                      input_schema={"type": "object"}, permission="read",
                      native={"anthropic": {"type": "text_editor_20250728"}}))


def test_any_tool_may_declare_a_native_form(tmp_path: Path) -> None:
    catalogue = Toolbox.load(cwd=tmp_path, plugins=["memory"], extra_plugins={"editor": Editor()}) \
        .session("default").catalogue()
    tools = {t["name"]: t for t in catalogue.to_anthropic(native=["str_replace_based_edit_tool"])}
    assert tools["str_replace_based_edit_tool"] == {"type": "text_editor_20250728",
                                                    "name": "str_replace_based_edit_tool"}
    assert "input_schema" in tools["memory"]  # only the tools named go native
    conforms(anthropic_types.ToolUnionParam, tools["str_replace_based_edit_tool"])
    with pytest.raises(TypeError, match="not a string"):
        catalogue.to_anthropic(native="memory")
    with pytest.raises(ValueError, match="'ScratchpadRead' declares no native anthropic tool type"):
        catalogue.to_anthropic(native={"ScratchpadRead"})
    with pytest.raises(ValueError, match="must be the tool's own"):
        Tool(name="notes", handler="x:y", input_schema={}, native={"anthropic": {"type": "memory_20250818",
                                                                                 "name": "memory"}})
    with pytest.raises(ValueError, match="no export sends a native tool of 'openai'"):
        Tool(name="notes", handler="x:y", input_schema={}, native={"openai": {"type": "apply_patch"}})


def test_a_session_not_offered_the_tool_leaves_it_out(tmp_path: Path) -> None:
    session = load(tmp_path).session("default")
    child = session.child()  # no memory for a sub-agent unless given
    assert "memory" not in [t.get("name") for t in child.catalogue().to_anthropic(native={"memory"})]
    reader = session.child(access={"memory": "read"})
    assert {"type": "memory_20250818", "name": "memory"} in reader.catalogue().to_anthropic(native={"memory"})


@pytest.mark.slow
def test_the_hosts_side_in_the_docs_runs_against_anthropics_api(tmp_path: Path) -> None:
    """docs/plugins/memory.md's host loop, as written, against a local server
    speaking Anthropic's Messages API (each request checked against the SDK's
    request types): the memory tool goes out as memory_20250818 and the
    model's calls of it are answered."""
    import os
    import re
    import subprocess
    import sys

    from _model_servers import model_server, say, use

    page = (Path(__file__).parents[3] / "docs" / "plugins" / "memory.md").read_text()
    block = re.search(r"## Anthropic's own memory tool type.*?```python\n(.*?)```", page, re.S)
    assert block is not None
    steps = [use(("memory", {"command": "view", "path": "/memories"})),
             use(("memory", {"command": "create", "path": "/memories/progress.md", "file_text": "step 1\n"})),
             say("Noted.")]
    with model_server("anthropic", steps) as server:
        done = subprocess.run([sys.executable, "-c", block.group(1), "Start the work."], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key",
                                   "PEGBOARD_PLUGINS": "memory,fs"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Noted."
    assert server.problems == []
    assert len(server.requests) == 3
    for request in server.requests:
        assert {"type": "memory_20250818", "name": "memory"} in request["tools"]
        assert "Read" in [t.get("name") for t in request["tools"]]  # the others stay function tools
    answered = [block for message in server.requests[2]["messages"] if message["role"] == "user"
                for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]
    texts = [part["text"] for block in answered for part in block["content"]]
    assert texts[0].startswith("Here're the files and directories up to 2 levels deep in /memories")
    assert texts[1] == "File created successfully at: /memories/progress.md"
    shown = subprocess.run([str(Path(sys.executable).parent / "pegboard"), "--cwd", str(tmp_path), "memory", "show",
                            "progress.md"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PEGBOARD_PLUGINS": "memory"})
    assert shown.stdout == "step 1\n", shown.stderr

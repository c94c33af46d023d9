"""A plugin declares its own tool namespace (``pegboard_tool_namespaces``)
and its protected paths (``pegboard_protected_paths``) through the public
API; the core knows no plugin's names (the mcp plugin declares ``mcp__``
and ``.mcp.json`` the same way)."""

from __future__ import annotations

import asyncio
import os
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from pegboard import Tool, Toolbox, ToolNamespace, Vote, hookimpl
from pegboard.paths import config_dir


class PushInput(BaseModel):
    item: str = ""


async def push(args: PushInput, ctx: Any) -> str:
    return f"pushed {args.item} with {ctx.tool.name}"


def queue_plugin(*names: str, namespaces: Any = None, protected: Any = None) -> types.SimpleNamespace:
    def register(register: Any) -> None:
        for name in names:
            register(Tool(name=name, handler=push, input_model=PushInput, permission="workspace"))

    def permission(request: Any, context: Any) -> Vote | None:
        return Vote.ask("a queue push") if request.tool.plugin == context.name else None

    hooks: dict[str, Any] = {"pegboard_register_tools": register, "pegboard_permission": permission}
    if namespaces is not None:
        hooks["pegboard_tool_namespaces"] = lambda: namespaces() if callable(namespaces) else namespaces
    if protected is not None:
        hooks["pegboard_protected_paths"] = lambda: protected
    return types.SimpleNamespace(**{name: hookimpl(fn) for name, fn in hooks.items()})


QUEUES = [ToolNamespace("queue", label="queue", unknown_hint="is the queue configured?")]
TOOLS = ("queue__billing__push", "queue__billing__push__all", "queue__mail__push")


def user_config(text: str) -> Path:
    path = config_dir() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, **plugins: object) -> Toolbox:
    return Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins=plugins)


def decision(toolbox: Toolbox, tool: str, mode: str = "default") -> str:
    return asyncio.run(toolbox.session(mode).decide(tool, {"item": "x"})).decision


@pytest.mark.parametrize("rule", ["queue__billing", "queue__billing__*"])
def test_a_group_rule_covers_every_tool_of_the_group_only(tmp_path: Path, rule: str) -> None:
    user_config(f'[permissions]\ndeny = ["{rule}"]\n')
    toolbox = load(tmp_path, queues=queue_plugin(*TOOLS, namespaces=QUEUES))
    assert decision(toolbox, "queue__billing__push") == "deny"
    assert decision(toolbox, "queue__billing__push__all") == "deny"
    assert decision(toolbox, "queue__mail__push") == "ask"
    assert toolbox.permissions.unknown == []  # the group is known by its tools


def test_a_tool_rule_in_a_group_names_that_tool_alone(tmp_path: Path) -> None:
    user_config('[permissions]\nallow = ["queue__billing__push"]\n')
    toolbox = load(tmp_path, queues=queue_plugin(*TOOLS, namespaces=QUEUES))
    assert decision(toolbox, "queue__billing__push") == "allow"
    # not a prefix: the group's tool push__all is another tool
    assert decision(toolbox, "queue__billing__push__all") == "ask"


def test_without_a_declared_namespace_a_group_rule_is_no_tools_rule(tmp_path: Path) -> None:
    user_config('[permissions]\ndeny = ["queue__billing"]\n')
    toolbox = load(tmp_path, queues=queue_plugin(*TOOLS))
    assert decision(toolbox, "queue__billing__push") == "ask"
    assert [r.text for r, _ in toolbox.permissions.unknown] == ["queue__billing"]


def test_a_groups_allow_rule_covers_only_the_declaring_plugins_tools(tmp_path: Path) -> None:
    user_config('[permissions]\nallow = ["queue__billing"]\nask = ["queue__mail"]\n')
    toolbox = load(tmp_path, queues=queue_plugin("queue__billing__push", namespaces=QUEUES),
                   sneaky=queue_plugin("queue__billing__drain", "queue__mail__drain"))
    assert decision(toolbox, "queue__billing__push") == "allow"
    # another plugin's tool named into the group is not allowed by the group's rule ...
    assert decision(toolbox, "queue__billing__drain") == "ask"
    # ... but the group's ask and deny rules cover it
    user_config('[permissions]\ndeny = ["queue__billing"]\n')
    toolbox = load(tmp_path, queues=queue_plugin("queue__billing__push", namespaces=QUEUES),
                   sneaky=queue_plugin("queue__billing__drain"))
    assert decision(toolbox, "queue__billing__drain", "bypassPermissions") == "deny"


def test_a_group_hides_from_a_child_session_and_previews(tmp_path: Path) -> None:
    toolbox = load(tmp_path, queues=queue_plugin(*TOOLS, namespaces=QUEUES))
    child = toolbox.session("default").child(hide=["queue__billing"])
    assert {t.name for t in child.offered()} & set(TOOLS) == {"queue__mail__push"}
    preview = toolbox.permissions.preview("queue__billing__*")
    assert "every call of every tool of queue 'billing'" in preview
    assert "queue__billing__push" in preview and "queue__mail__push" not in preview


def test_doctor_warns_of_an_unknown_group_with_the_namespaces_hint(tmp_path: Path) -> None:
    user_config('[permissions]\ndeny = ["queue__nosuch", "Nosuch"]\n')
    toolbox = load(tmp_path, queues=queue_plugin(*TOOLS, namespaces=QUEUES))
    from pegboard._cli.commands.trust import unknown_rule_lines

    lines = dict((detail.split(": rule ")[1].split(":")[0], status) for status, detail in unknown_rule_lines(toolbox))
    assert lines == {"'queue__nosuch'": "warn", "'Nosuch' names no known tool, so it denies nothing": "fail"}
    warn = next(d for s, d in unknown_rule_lines(toolbox) if s == "warn")
    assert "no tool of that queue is known (is the queue configured?)" in warn


def test_a_namespace_declared_twice_is_refused_for_the_later_plugin(tmp_path: Path) -> None:
    toolbox = load(tmp_path, aqueues=queue_plugin("queue__a__push", namespaces=QUEUES),
                   bqueues=queue_plugin("queue__b__push", namespaces=[ToolNamespace("queue")]))
    assert toolbox.permissions.namespaces["queue"][1] == "aqueues"
    assert toolbox.records["bqueues"].warnings == [
        "tool namespace 'queue' not declared: plugin 'aqueues' declared it first"]
    assert "queue__b__push" in toolbox.tools  # the rest of the plugin loads


def test_a_plugin_that_cannot_declare_its_namespaces_does_not_load(tmp_path: Path) -> None:
    def broken() -> list[object]:
        raise RuntimeError("no namespaces today")

    toolbox = load(tmp_path, broken=queue_plugin("queue__a__push", namespaces=broken),
                   wrong=queue_plugin("other__a__push", namespaces=["other"]))
    assert "RuntimeError: no namespaces today" in (toolbox.records["broken"].error or "")
    assert "returned str, not a pegboard.ToolNamespace" in (toolbox.records["wrong"].error or "")
    assert not {"queue__a__push", "other__a__push"} & set(toolbox.tools)
    assert toolbox.plugins.pm.get_plugin("broken") is None


@pytest.mark.parametrize("name", ["", "a__b", "queue_", "sp ace", "x(y)"])
def test_a_namespace_name_is_checked(name: str) -> None:
    with pytest.raises(ValueError, match="ToolNamespace name"):
        ToolNamespace(name)


def test_the_core_declares_no_namespace_and_mcp_declares_its_own(tmp_path: Path) -> None:
    assert load(tmp_path).permissions.namespaces == {}
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["mcp"])
    namespace, plugin = toolbox.permissions.namespaces["mcp"]
    assert (plugin, namespace.label) == ("mcp", "MCP server")


# --- protected paths from plugins -------------------------------------------------------


def test_a_plugin_adds_protected_paths(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    toolbox = Toolbox.load(cwd=root, plugins=["fs"], extra_plugins={
        "queues": queue_plugin(protected=[".queues.toml", "queue-hooks/**"])})
    session = toolbox.session("acceptEdits")
    for path in (root / ".queues.toml", root / "sub" / ".queues.toml", root / "queue-hooks" / "run"):
        decided = asyncio.run(session.decide("Write", {"file_path": str(path), "content": "x"}))
        assert decided.decision == "ask" and decided.firm and "protected" in decided.reason, path
    other = asyncio.run(session.decide("Write", {"file_path": str(root / "notes.txt"), "content": "x"}))
    assert other.decision == "allow"
    assert ".queues.toml" in session.protected_patterns() and "queue-hooks" in session.protected_patterns()


def test_the_operator_may_unprotect_a_plugins_path_and_a_plugin_may_not_unprotect(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    user_config('[permissions]\nprotected_paths = ["!.queues.toml"]\n')
    toolbox = Toolbox.load(cwd=root, plugins=["fs"], extra_plugins={"queues": queue_plugin(protected=[".queues.toml"])})
    assert not toolbox.session().is_protected(str(root / ".queues.toml"))
    toolbox = Toolbox.load(cwd=root, plugins=["fs"], extra_plugins={"queues": queue_plugin(protected=["!.git/**"])})
    assert "a plugin adds protected paths, it cannot unprotect one" in (toolbox.records["queues"].error or "")
    assert toolbox.session().is_protected(str(root / ".git" / "config"))


def test_mcp_json_is_protected_by_the_mcp_plugin_not_the_core(tmp_path: Path) -> None:
    root = Path(os.path.realpath(tmp_path))
    target = str(root / ".mcp.json")
    assert not Toolbox.load(cwd=root, plugins=["fs"]).session().is_protected(target)
    assert Toolbox.load(cwd=root, plugins=["fs", "mcp"]).session().is_protected(target)
    from pegboard._cli.main import cli

    shown = CliRunner().invoke(cli, ["--cwd", str(root), "config", "show"], env={"PEGBOARD_PLUGINS": "fs,mcp"})
    assert ".mcp.json" in shown.output

"""A tool's own voter (``Tool(vote=...)``): asked only about its tool's calls,
with the arguments it names, failing closed."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pegboard import PermissionRequest, Tool, Toolbox, Vote, hookimpl


class NameInput(BaseModel):
    name: str


async def greet(args: NameInput, ctx: Any) -> str:
    return f"hi {args.name}"


SEEN: list[tuple[str, Any, Any]] = []


def own_vote(request: PermissionRequest, config: Any, context: Any) -> Vote | None:
    SEEN.append((request.tool.name, config, context.name))
    if request.input.get("name") == "Mallory":
        return Vote.deny("not Mallory")
    return Vote.allow("greeting is harmless")


def request_only(request: PermissionRequest) -> Vote:
    return Vote.ask(f"{request.tool.name} asks")


def takes_what_it_cannot_have(request: PermissionRequest, session: Any) -> Vote:
    return Vote.allow("never")


def _plugin(*tools: Tool) -> types.SimpleNamespace:
    def register(register: Any) -> None:
        for tool in tools:
            register(tool)

    return types.SimpleNamespace(pegboard_register_tools=hookimpl(register))


def _decide(toolbox: Toolbox, tool: str, name: str, mode: str = "default") -> tuple[str, str, str]:
    decision = asyncio.run(toolbox.session(mode).decide(tool, {"name": name}))
    return decision.decision, decision.reason, decision.source


def test_a_tools_own_vote_decides_its_calls_only(tmp_path: Path) -> None:
    SEEN.clear()
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"greeter": _plugin(
        Tool(name="Greet", handler=greet, input_model=NameInput, vote=own_vote),
        Tool(name="Plain", handler=greet, input_model=NameInput))})
    assert _decide(toolbox, "Greet", "Ada") == ("allow", "greeting is harmless", "plugin greeter")
    assert _decide(toolbox, "Greet", "Mallory") == ("deny", "not Mallory", "plugin greeter")
    # the other tool of the same plugin is not the voter's business
    assert _decide(toolbox, "Plain", "Mallory")[0] == "ask"
    assert [(tool, config, plugin) for tool, config, plugin in SEEN] == [
        ("Greet", None, "greeter"), ("Greet", None, "greeter")]


def test_a_vote_given_as_module_attribute_and_naming_only_the_request(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"greeter": _plugin(
        Tool(name="Greet", handler=greet, input_model=NameInput, vote=f"{__name__}:request_only"))})
    assert _decide(toolbox, "Greet", "Ada")[:2] == ("ask", "Greet asks")


def test_deny_rules_beat_a_tools_own_allow(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('[permissions]\ndeny = ["Greet"]\n')
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], config=tmp_path / "c.toml",
                           extra_plugins={"greeter": _plugin(
                               Tool(name="Greet", handler=greet, input_model=NameInput, vote=own_vote))})
    assert _decide(toolbox, "Greet", "Ada")[0] == "deny"


def test_a_vote_that_cannot_be_used_denies_its_tool_and_says_why(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path, plugins=[], extra_plugins={"greeter": _plugin(
        Tool(name="Missing", handler=greet, input_model=NameInput, vote=f"{__name__}:no_such_vote"),
        Tool(name="Greedy", handler=greet, input_model=NameInput, vote=takes_what_it_cannot_have))})
    decision, reason, _ = _decide(toolbox, "Missing", "Ada", mode="bypassPermissions")
    assert decision == "deny" and "the vote of Missing cannot be used" in reason and "no_such_vote" in reason
    decision, reason, _ = _decide(toolbox, "Greedy", "Ada", mode="bypassPermissions")
    assert decision == "deny" and "takes session" in reason and "request, config, context" in reason


def test_the_built_in_plugins_vote_through_their_tools(tmp_path: Path) -> None:
    toolbox = Toolbox.load(cwd=tmp_path)
    voting = {name: record for name, record in toolbox.plugins.records.items()
              if "pegboard_permission" in record.hooks}
    assert voting == {}, f"built-ins still vote on every call: {sorted(voting)}"
    assert toolbox.tools["Read"].vote is not None and toolbox.tools["Bash"].vote is not None

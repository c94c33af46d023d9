"""Pre- and post-call hooks, from a plugin and from a host: rewrite input
(re-validated and re-checked by permissions), block, add context, rewrite
output; and hooks that fail."""

from __future__ import annotations

from typing import Any

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401
from pegboard import CallInfo, PreCall, ToolResult, hookimpl

pytestmark = pytest.mark.anyio


class Host:
    """A host with one pre-call and one post-call hook, each a function of the call."""

    def __init__(self, before: Any = None, after: Any = None) -> None:
        self.before, self.after = before, after
        self.seen: list[dict[str, Any]] = []

    @hookimpl
    def pegboard_before_call(self, call: CallInfo) -> PreCall | None:
        self.seen.append(dict(call.input))
        return self.before(call) if self.before else None

    @hookimpl
    def pegboard_after_call(self, call: CallInfo, result: ToolResult) -> ToolResult | None:
        return self.after(call, result) if self.after else None


async def test_pre_hook_rewrites_input(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(input={**call.input, "text": call.input["text"] + "!"}))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("Echo", {"text": "hi", "count": 2})
    assert result.text_content() == "hi!hi!"
    # The hook saw the validated input, defaults filled in.
    assert host.seen == [{"text": "hi", "count": 2, "mode": "plain"}]


async def test_rewritten_input_is_validated_again(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(input={**call.input, "count": 99}))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("Echo", {"text": "hi"})
    assert result.is_error
    assert "A pre-call hook rewrote the arguments of Echo into invalid ones" in result.text_content()
    assert "- count:" in result.text_content()
    assert session.plugin_state("pipetest").get("seen") is None


async def test_rewritten_input_is_checked_by_permissions_again(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(input={**call.input, "path": "forbidden.txt"}))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    root = session.root
    result = await session.call("WriteFile", {"label": "w", "path": "fine.txt", "text": "x", "seconds": 0})
    assert result.is_error
    assert result.text_content() == ("Permission denied for WriteFile: forbidden.txt is forbidden by the "
                                     "pipetest plugin (decided by plugin pipetest).")
    assert not (root / "forbidden.txt").exists() and not (root / "fine.txt").exists()


async def test_rewrite_to_allowed_input_runs_with_rewritten_input(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(input={**call.input, "path": "redirected.txt"}))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("WriteFile", {"label": "w", "path": "forbidden.txt", "text": "x", "seconds": 0})
    # The original input was denied before the hook ever ran: the decision comes first.
    assert result.is_error and "forbidden" in result.text_content()
    assert host.seen == []
    ok = await session.call("WriteFile", {"label": "w", "path": "a.txt", "text": "x", "seconds": 0})
    assert not ok.is_error
    assert (session.root / "redirected.txt").read_text() == "x" and not (session.root / "a.txt").exists()


async def test_pre_hook_blocks_with_a_message(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(block="No writes on Fridays; try again Monday."))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("WriteFile", {"label": "w", "path": "a.txt", "text": "x", "seconds": 0})
    assert result.is_error and result.text_content() == "No writes on Fridays; try again Monday."
    assert not (session.root / "a.txt").exists()


async def test_pre_hook_adds_context(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(context="Remember: echo is loud."))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("Echo", {"text": "hi"})
    assert [c.text for c in result.content] == ["hi", "Remember: echo is loud."]  # type: ignore[union-attr]


async def test_failing_or_nonsense_pre_hook_blocks(plugin_factory: PluginFactory) -> None:
    def explode(call: CallInfo) -> PreCall:
        raise KeyError("guard config")

    session = plugin_factory(PIPETEST, host=Host(before=explode)).session("workspace")
    result = await session.call("Echo", {"text": "hi"})
    assert result.is_error and "pre-call hook of 'host' failed (KeyError: 'guard config'" in result.text_content()
    assert session.plugin_state("pipetest").get("seen") is None

    nonsense = plugin_factory(PIPETEST, host=Host(before=lambda call: "allow")).session("workspace")
    result = await nonsense.call("Echo", {"text": "hi"})
    assert result.is_error and "returned str, not PreCall" in result.text_content()


async def test_post_hook_rewrites_output(plugin_factory: PluginFactory) -> None:
    host = Host(after=lambda call, result: ToolResult.text(result.text_content().replace("secret", "[redacted]")))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    result = await session.call("Echo", {"text": "the secret is 42"})
    assert result.text_content() == "the [redacted] is 42"


async def test_post_hook_sees_tool_errors_and_failure_is_reported(plugin_factory: PluginFactory) -> None:
    seen: list[bool] = []

    def after(call: CallInfo, result: ToolResult) -> None:
        seen.append(result.is_error)
        raise RuntimeError("logger down")

    session = plugin_factory(PIPETEST, host=Host(after=after)).session("workspace")
    result = await session.call("Echo", {"text": "hi"})
    assert not result.is_error and result.content[0].text == "hi"  # type: ignore[union-attr]
    assert "post-call hook of 'host' failed: RuntimeError: logger down" in result.text_content()
    assert (await session.call("Boom", {})).is_error
    assert seen == [False, True]


async def test_plugin_hooks_run_in_order_and_async_host_hooks_work(plugin_factory: PluginFactory) -> None:
    class AsyncHost:
        @hookimpl
        async def pegboard_before_call(self, call: CallInfo) -> PreCall:
            return PreCall(input={**call.input, "text": call.input["text"] + "+host"})

    toolbox = plugin_factory(PIPETEST + """
from pegboard import PreCall, ToolResult, hookimpl

@hookimpl
def pegboard_before_call(call):
    if call.tool.name == "Echo":
        return PreCall(input={**call.input, "text": call.input["text"] + "+plugin"})

@hookimpl
def pegboard_after_call(call, result):
    return ToolResult.text("<" + result.text_content() + ">")
""", host=AsyncHost())
    result = await toolbox.session("workspace").call("Echo", {"text": "x"})
    # Both rewrites applied, each on top of the one before, in pluggy's order
    # (last registered first: the host registers after the plugins, so it runs first).
    assert result.text_content() == "<x+host+plugin>"


async def test_tryfirst_hook_runs_first(plugin_factory: PluginFactory) -> None:
    class Late:
        @hookimpl(trylast=True)
        def pegboard_before_call(self, call: CallInfo) -> PreCall:
            return PreCall(input={**call.input, "text": call.input["text"] + "+late"})

    toolbox = plugin_factory(PIPETEST + """
from pegboard import PreCall, hookimpl

@hookimpl(tryfirst=True)
def pegboard_before_call(call):
    return PreCall(input={**call.input, "text": call.input["text"] + "+first"})
""", host=Late())
    result = await toolbox.session("workspace").call("Echo", {"text": "x"})
    assert result.text_content() == "x+first+late"


async def test_hooks_do_not_run_for_refused_calls(plugin_factory: PluginFactory) -> None:
    host = Host(after=lambda call, result: ToolResult.text("replaced"))
    session = plugin_factory(PIPETEST, host=host).session("workspace")
    bad = await session.call("Echo", {"count": 2})
    assert bad.is_error and "Invalid arguments" in bad.text_content()
    assert host.seen == []


async def test_hooks_see_schema_names_and_an_unchanged_rewrite_validates(plugin_factory: PluginFactory) -> None:
    host = Host(before=lambda call: PreCall(input=dict(call.input)))
    session = plugin_factory(PIPETEST + '''
from pydantic import BaseModel, Field
from pegboard import Tool, hookimpl

class AliasIn(BaseModel):
    before: int = Field(default=0, alias="-B")

async def aliased(args, ctx):
    return f"before={args.before}"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Aliased", handler=aliased, input_model=AliasIn, read_only=True, permission="read"))
''', name="pipealias", host=host).session("workspace")
    result = await session.call("Aliased", {"-B": 3})
    assert result.text_content() == "before=3"
    assert host.seen == [{"-B": 3}]

"""What hooks and handlers are handed, so that a plugin never reaches
through ``session.toolbox``: its own config and context in votes, a rules
query, the result limit and the paths the decision resolved."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401

ROOT = Path(__file__).parents[3]

PLUGIN = '''
import json
from pydantic import BaseModel, ConfigDict
from pegboard import Tool, Vote, hookimpl

class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: str = "allow"

class PathIn(BaseModel):
    path: str

SEEN = []

async def inspect(args, ctx):
    denied = ctx.rule_for("deny", "Inspect", {"path": args.path})
    return json.dumps({
        "plugin": ctx.plugin,
        "context": ctx.plugin_context.name,
        "limit": ctx.result_limit,
        "resolved": str(ctx.resolved(args.path)),
        "unresolved": ctx.resolved("never-asked") is None,
        "deny_rules": [c.rule.text for c in ctx.rules_for("deny", "Inspect")],
        "denied_by": denied.rule.text if denied else None,
    })

class Matcher:
    def __init__(self, rule):
        self.pattern = rule.specifier
    def matches(self, request):
        return request.input.get("path") == self.pattern

@hookimpl
def pegboard_config_model():
    return Options

@hookimpl
def pegboard_register_tools(register, context):
    context.report(f"{context.name}: a problem that did not stop the plugin")
    register(Tool(name="Inspect", handler=inspect, input_model=PathIn, read_only=True, permission="read",
                  vote=vote))

@hookimpl
def pegboard_rule_matcher(rule, context):
    return Matcher(rule) if rule.tool == "Inspect" and rule.specifier else None

def vote(request, config, context):
    SEEN.append((type(config).__name__, context.name))
    request.resolve(request.input["path"])
    if config.verdict == "deny":
        return Vote.deny("the config says no")
    return Vote.allow("fine")
'''


def test_a_vote_gets_its_plugins_config_and_context(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PLUGIN, name="ctxtest", config="[plugins.ctxtest]\nverdict = 'deny'\n")
    session = toolbox.session()
    result = asyncio.run(session.call("Inspect", {"path": "a.txt"}))
    assert result.is_error and "the config says no" in result.text_content()
    module = __import__(toolbox.records["ctxtest"].module)
    assert module.SEEN == [("Options", "ctxtest")]


def test_a_handler_gets_the_limit_the_resolved_paths_and_a_rules_query(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PLUGIN, name="ctxtest", config='''
        [results]
        max_chars = 5000
        [permissions]
        deny = ["Inspect(secret)"]
    ''')
    (plugin_factory.root / "link").symlink_to(plugin_factory.root / "target")
    session = toolbox.session()
    seen = json.loads(asyncio.run(session.call("Inspect", {"path": "link"})).text_content())
    assert seen == {
        "plugin": "ctxtest", "context": "ctxtest", "limit": 5000,
        "resolved": str((plugin_factory.root / "target").resolve()), "unresolved": True,
        "deny_rules": ["Inspect(secret)"], "denied_by": None,
    }
    # the query is the engine's: the same rule that denies the call itself
    assert session.rule_for("deny", "Inspect", {"path": "secret"}).rule.text == "Inspect(secret)"
    assert asyncio.run(session.call("Inspect", {"path": "secret"})).is_error
    session.grant("Inspect(other)", "deny")
    assert [c.rule.text for c in session.rules_for("deny", "Inspect")] == ["Inspect(secret)", "Inspect(other)"]
    assert session.rule_for("deny", "NoSuchTool", {}) is None


def test_report_reaches_the_operator(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(PLUGIN, name="ctxtest")
    assert toolbox.settings.problems == ["ctxtest: a problem that did not stop the plugin"]


def test_a_grant_for_a_tool_no_plugin_provides_says_so(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PLUGIN, name="ctxtest").session()
    try:
        session.grant("Bash(git:*)")
    except ValueError as exc:
        assert str(exc) == "no loaded plugin provides Bash"
    else:
        raise AssertionError("granted a rule for a tool nobody provides")


def test_a_host_registered_later_votes_too(plugin_factory: PluginFactory) -> None:
    from pegboard import Vote, hookimpl

    toolbox = plugin_factory(PLUGIN, name="ctxtest")
    session = toolbox.session()
    assert not asyncio.run(session.call("Inspect", {"path": "a"})).is_error

    class Host:
        @hookimpl
        def pegboard_permission(self) -> Vote:
            return Vote.deny("the host says no")

    toolbox.add_host(Host())
    assert "the host says no" in asyncio.run(session.call("Inspect", {"path": "a"})).text_content()


def _toolbox_reaches(path: Path) -> list[int]:
    """Lines where ``session.toolbox`` (or ``<x>.session.toolbox``) is read."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "toolbox":
            owner = node.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "session":
                lines.append(node.lineno)
    return lines


def test_no_plugin_reaches_through_session_toolbox() -> None:
    # web/_rules reads the operator's WebFetch rules for loopback unlocks;
    # the trust work on those unlocks moves it onto Session.rules_for.
    # mcp/_serve is a host (`pegboard serve` embeds a toolbox, as any host may).
    waiting = {"plugins/web/_rules.py", "plugins/mcp/_serve.py"}
    found = {str(p.relative_to(ROOT)): _toolbox_reaches(p) for p in (ROOT / "plugins").rglob("*.py")}
    assert {p for p, lines in found.items() if lines} <= waiting

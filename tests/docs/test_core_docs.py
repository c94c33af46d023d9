"""docs/plugins.md holds every hook pegboard and the built-in plugins specify,
each under a heading with the specification's arguments, ``name(arg1, arg2)``
(as datasette checks its plugin hooks), and each with an example that is a
plugin: it loads, implements the hook with arguments the specification has,
and runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import Toolbox

GUIDE = Path(__file__).parents[2] / "docs" / "plugins.md"
HEADING = re.compile(r"^### `(pegboard_\w+)\(([^)]*)\)`$", re.M)


def sections(text: str | None = None) -> list[tuple[str, tuple[str, ...], str]]:
    """(hook, the heading's arguments, the section's text) for each ``### `` heading."""
    text = GUIDE.read_text() if text is None else text
    found = []
    for section in re.split(r"^(?=### )", text, flags=re.M)[1:]:
        heading = HEADING.match(section)
        assert heading, f"not a hook heading (### `pegboard_name(arg, ...)`): {section.splitlines()[0]}"
        args = tuple(a.strip() for a in heading.group(2).split(",") if a.strip())
        found.append((heading.group(1), args, section))
    return found


def examples() -> list[tuple[str, str]]:
    found = []
    for hook, _, section in sections():
        block = re.search(r"```python\n(.*?)```", section, re.S)
        assert block, f"{hook} has no example"
        found.append((hook, block.group(1)))
    return found


def specifications() -> dict[str, tuple[str, ...]]:
    """Every hook specification a toolbox with all the built-in plugins has, with its arguments."""
    toolbox = Toolbox.load()
    found = {}
    for name, caller in vars(toolbox.hook).items():
        spec = getattr(caller, "spec", None)
        if name.startswith("pegboard_") and spec is not None:
            found[name] = tuple(spec.argnames)
    return found


def heading_problems(text: str, specs: dict[str, tuple[str, ...]]) -> list[str]:
    documented: dict[str, tuple[str, ...]] = {}
    problems = []
    for hook, args, _ in sections(text):
        if hook in documented:
            problems.append(f"{hook}: two headings")
        documented[hook] = args
    problems += [f"{hook}{specs[hook]}: no heading" for hook in sorted(set(specs) - set(documented))]
    problems += [f"{hook}: a heading, and no specification" for hook in sorted(set(documented) - set(specs))]
    problems += [f"{hook}: the heading says ({', '.join(args)}), the specification ({', '.join(specs[hook])})"
                 for hook, args in documented.items() if hook in specs and args != specs[hook]]
    return problems


def test_every_hook_has_a_heading_with_its_arguments() -> None:
    assert heading_problems(GUIDE.read_text(), specifications()) == []


def test_heading_problems_are_found() -> None:
    text = GUIDE.read_text()
    specs = specifications()
    wrong = text.replace("### `pegboard_ask(request, decision)`", "### `pegboard_ask(request)`")
    assert heading_problems(wrong, specs) == [
        "pegboard_ask: the heading says (request), the specification (request, decision)"]
    cut = re.sub(r"^### `pegboard_doctor\(.*?(?=^### )", "", text, flags=re.M | re.S)
    assert heading_problems(cut, specs) == ["pegboard_doctor('config', 'context'): no heading"]
    extra = text + "\n### `pegboard_doctr(config)`\n"
    assert heading_problems(extra, specs) == ["pegboard_doctr: a heading, and no specification"]


@pytest.mark.parametrize("hook, source", examples(), ids=[h for h, _ in examples()])
def test_example_implements_its_hook_with_the_spec_arguments(hook: str, source: str) -> None:
    spec = specifications()[hook]
    functions = {node.name: node for node in ast.walk(ast.parse(source))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert hook in functions, f"the example for {hook} does not implement it"
    node = functions[hook]
    assert any(ast.unparse(d) in ("hookimpl", "pegboard.hookimpl") or ast.unparse(d).startswith("hookimpl(")
               for d in node.decorator_list), f"{hook}'s example lacks @hookimpl"
    args = [a.arg for a in node.args.args]
    assert set(args) <= set(spec), f"{hook}'s example takes {args}; the specification has {spec}"


def test_register_tools_example_runs(plugin_factory: PluginFactory) -> None:
    import asyncio

    source = dict(examples())["pegboard_register_tools"]
    plugin_factory.write(source, name="docexample")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["docexample"])
    result = asyncio.run(toolbox.session().call("Greet", {"name": "Ada"}))
    assert result.text_content() == "Hello, Ada!"


def test_readme_embedding_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    readme = GUIDE.parent.parent / "README.md"
    block = re.search(r"## Embedding it in an agent loop\n\n```python\n(.*?)```", readme.read_text(), re.S)
    assert block
    monkeypatch.chdir(readme.parent)
    exec(compile(block.group(1), "README.md", "exec"), {})
    assert "pegboard" in capsys.readouterr().out


# --- each example runs: its implementation called with real objects for the spec's arguments ---

def _greet_tool() -> Any:
    from pydantic import BaseModel

    from pegboard import Tool

    class GreetInput(BaseModel):
        name: str

    return Tool(name="Greet", handler=lambda args, ctx: f"Hello, {args.name}!", input_model=GreetInput,
                read_only=True, permission="read", plugin="docexample")


def _arguments(toolbox: Toolbox, session: Any, added: list[object], registered: list[object]) -> dict[str, Any]:
    """A real object for every argument name a hook specification has."""
    import click

    from pegboard import CallInfo, Decision, PermissionRequest, Rule, ToolResult
    from pegboard.plugins.schedule import Firing
    from pegboard.plugins.subtasks import SubagentRun

    greet = _greet_tool()
    return {
        "add": added.append,
        "register": registered.append,
        "config": toolbox.plugin_config("docexample"),
        "context": toolbox.context_for("docexample"),
        "tool": greet,
        "request": PermissionRequest(tool=greet, input={"name": "ada"}, session=session, policy=session.policy),
        "rule": Rule.parse("Greet(Ada)", "allow", "test"),
        "decision": Decision("ask", "Greet needs approval here", "test", ("Greet",)),
        "session": session,
        "source": "MCP server 'docs'",
        "message": "Which name?",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
        "call": CallInfo(session=session, tool=greet, input={"name": "ada"}, call_id="call-1"),
        "result": ToolResult.text("Hello, Ada!"),
        "kind": "background.done",
        "data": {"id": "task-1", "status": "done"},
        "session_id": session.id,
        "cli": click.Group("pegboard"),
        "path": session.root / "notes.txt",
        "prompt": "What does the page say?",
        "content": "# Docs\n\nAll about pegboard.",
        "url": "https://example.com/docs",
        "name": "greet",
        "arguments": {"who": "Ada"},
        "run": SubagentRun(session=session, agent_id="agent-1", agent_type="Explore", description="look",
                           system_prompt="You explore.", prompt="Look around.", model=None, max_turns=3),
        "server": "summarizer",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarize the notes."}}],
                   "maxTokens": 200},
        "questions": [{"question": "Which library?", "header": "Library", "multiSelect": False,
                       "options": [{"label": "httpx", "description": "async"},
                                   {"label": "requests", "description": "sync"}]}],
        "instructions": "Keep the port numbers.",
        "keep_recent": True,
        "firing": Firing(id="job-1@0", job_id="job-1", session_id=session.id, kind="wakeup",
                         prompt="Check the build.", due_at=0.0, zone="UTC", root=str(session.root)),
    }


def _check(hook: str, value: Any, args: dict[str, Any], added: list[object], registered: list[object]) -> None:
    """What each example's implementation must have given back or done."""
    from pydantic import BaseModel

    from pegboard import Answer, Check, PreCall, RuleSamples, StoreSchema, Tool, ToolResult, Vote

    if hook == "pegboard_add_hooks":
        assert added and all(hasattr(ns, "pegboard_greeting_words") for ns in added)
    elif hook == "pegboard_config_model":
        assert isinstance(value, type) and issubclass(value, BaseModel)
    elif hook == "pegboard_register_tools":
        assert registered and all(isinstance(t, Tool) for t in registered)
    elif hook in ("pegboard_tool_description", "pegboard_summarize", "pegboard_prompt", "pegboard_run_subagent"):
        assert isinstance(value, str) and value
    elif hook in ("pegboard_permission", "pegboard_classify"):
        assert isinstance(value, Vote)
    elif hook == "pegboard_rule_matcher":
        assert value.matches(args["request"]) is False  # the example's rule is Greet(Ada); the call greets "ada"
    elif hook == "pegboard_ask":
        assert isinstance(value, Answer)
    elif hook == "pegboard_elicit":
        assert value["action"] in ("accept", "decline", "cancel")
    elif hook == "pegboard_before_call":
        assert isinstance(value, PreCall) and value.input == {"name": "Ada"}
    elif hook == "pegboard_after_call":
        assert isinstance(value, ToolResult) and value.text_content().startswith("Hello, Ada!")
    elif hook == "pegboard_store_schema":
        assert isinstance(value, StoreSchema) and value.problems("docexample") == []
    elif hook == "pegboard_doctor":
        assert value and all(isinstance(c, Check) for c in value)
    elif hook == "pegboard_register_commands":
        assert args["cli"].commands
    elif hook == "pegboard_file_read":
        assert args["session"].plugin_state("audit")["seen"] == [str(args["path"])]
    elif hook in ("pegboard_skill_dirs", "pegboard_agent_dirs"):
        assert value and all(isinstance(p, Path) for p in value)
    elif hook == "pegboard_prompts":
        assert value and all({"name", "description"} <= set(p) for p in value)
    elif hook == "pegboard_mcp_sample":
        assert isinstance(value, str) and value
    elif hook == "pegboard_ask_user":
        assert value["answers"] == {"Which library?": "httpx"}
    elif hook == "pegboard_schedule_deliver":
        assert value is True
    elif hook == "pegboard_conversation_messages":
        assert value is None or all("role" in m or "type" in m for m in value)
    elif hook == "pegboard_context_usage":
        from pegboard.plugins.conversation import ContextUsage

        assert ContextUsage.model_validate(value).window_tokens > 0
    elif hook == "pegboard_context_compact":
        assert value is True and args["session"].plugin_state("host")["compact"] == ("Keep the port numbers.", True)
    elif hook == "pegboard_rule_samples":
        assert isinstance(value, RuleSamples) and value.rules and value.calls
    elif hook == "pegboard_tool_namespaces":
        from pegboard import ToolNamespace

        assert value and all(isinstance(n, ToolNamespace) for n in value)
    elif hook == "pegboard_protected_paths":
        assert value and all(isinstance(p, str) for p in value)
    else:  # pegboard_event, pegboard_session_closed, pegboard_session_deleted: for their effects
        assert value is None


def _declaring_plugin(hook: str) -> list[str]:
    """The built-in plugin whose hook it is (its spec lives in pegboard.plugins.<name>), if any."""
    spec = getattr(Toolbox.load().hook, hook).spec
    match = re.match(r"pegboard\.plugins\.(\w+)\.", getattr(spec.namespace, "__name__", ""))
    return [match.group(1)] if match else []


@pytest.mark.parametrize("hook, source", examples(), ids=[h for h, _ in examples()])
def test_example_runs(plugin_factory: PluginFactory, capsys: pytest.CaptureFixture[str],
                      hook: str, source: str) -> None:
    import asyncio
    import inspect

    plugin_factory.write(source, name="docexample")
    also = _declaring_plugin(hook)  # so the implementation is checked against that plugin's spec
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["docexample", *also])
    assert toolbox.records["docexample"].error is None, toolbox.records["docexample"].error
    assert toolbox.records["docexample"].warnings == []
    impls = [i for i in getattr(toolbox.hook, hook).get_hookimpls() if i.plugin_name == "docexample"]
    assert len(impls) == 1
    session = toolbox.session()
    added: list[object] = []
    registered: list[object] = []
    args = _arguments(toolbox, session, added, registered)

    async def run() -> Any:
        value = impls[0].function(**{name: args[name] for name in impls[0].argnames})
        return await value if inspect.isawaitable(value) else value

    value = asyncio.run(run())
    _check(hook, value, args, added, registered)

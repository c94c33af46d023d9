"""docs/plugins.md holds every hook pegboard and the built-in plugins specify,
each under a heading with the specification's arguments, ``name(arg1, arg2)``
(as datasette checks its plugin hooks), and each with an example that is a
plugin: it loads, implements the hook with arguments the specification has,
and runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import Toolbox

GUIDE = Path(__file__).parent.parent / "docs" / "plugins.md"
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


@pytest.mark.parametrize("hook, source", examples(), ids=[h for h, _ in examples()])
def test_hook_example_loads_as_a_plugin(plugin_factory: PluginFactory, hook: str, source: str) -> None:
    plugin_factory.write(source, name="docexample")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["docexample"])
    record = toolbox.records["docexample"]
    assert record.error is None, record.error
    impls = [i.plugin_name for i in getattr(toolbox.hook, hook).get_hookimpls()]
    assert "docexample" in impls


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

"""Each hook's example in docs/plugins.md is a plugin that really loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import Toolbox

GUIDE = Path(__file__).parent.parent / "docs" / "plugins.md"


def examples() -> list[tuple[str, str]]:
    text = GUIDE.read_text()
    found = []
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        hook = section.split("`")[1].split("(")[0]
        block = re.search(r"```python\n(.*?)```", section, re.S)
        assert block, f"{hook} has no example"
        found.append((hook, block.group(1)))
    return found


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

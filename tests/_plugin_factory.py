"""Register test tools the way real plugins arrive: through an entry point.

A tiny distribution (``<name>-0.1.dist-info`` with ``METADATA`` and
``entry_points.txt``) and the plugin module are written into ``tmp_path/site``,
which is put on ``sys.path``; then ``Toolbox.load(plugins=[name])`` discovers
it like any installed plugin. Usage::

    from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401  (fixture)

    def test_x(plugin_factory: PluginFactory) -> None:
        toolbox = plugin_factory('''
            from pegboard import Tool, hookimpl
            @hookimpl
            def pegboard_register_tools(register):
                register(Tool(name="Echo", handler=echo, input_model=EchoIn, read_only=True, permission="read"))
        ''')

Each call writes a module with a fresh name, so two toolboxes in one test
(or one process) never share a cached module.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from _trusted import trust
from pegboard import Toolbox

__all__ = ["PIPETEST", "PluginFactory", "plugin_factory"]


class PluginFactory:
    """Writes plugin distributions into ``tmp_path/site`` and loads toolboxes."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        self.root = tmp_path / "project"
        self.root.mkdir(exist_ok=True)
        self.site = tmp_path / "site"
        self.site.mkdir(exist_ok=True)
        self._monkeypatch = monkeypatch
        self._modules: list[str] = []
        monkeypatch.syspath_prepend(str(self.site))

    def write(self, source: str, *, name: str = "pipetest") -> str:
        """Write (or replace) the distribution ``name`` whose module holds
        ``source``; returns the module name."""
        module = f"{name}_plugin_{uuid.uuid4().hex[:8]}"
        # A fresh module name per call: sys.modules would otherwise hand a
        # second test the first test's module.
        (self.site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        dist = self.site / f"{name}-0.1.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
        (dist / "entry_points.txt").write_text(f"[pegboard]\n{name} = {module}\n", encoding="utf-8")
        self._modules.append(module)
        importlib.invalidate_caches()
        return module

    def config(self, text: str, *, trusted: bool = True) -> Path:
        """Write the project's ``.pegboard/config.toml``; the folder is trusted
        (so that the config applies) unless ``trusted=False``."""
        path = self.root / ".pegboard" / "config.toml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        if trusted:
            trust(self.root)
        return path

    def __call__(self, source: str, *, name: str = "pipetest", config: str | None = None,
                 host: object | None = None, also: tuple[str, ...] = ()) -> Toolbox:
        """Write the plugin and load a toolbox with only it (and ``also``)."""
        self.write(source, name=name)
        if config is not None:
            self.config(config)
        return Toolbox.load(cwd=self.root, plugins=[name, *also], host=host)

    def cleanup(self) -> None:
        for module in self._modules:
            sys.modules.pop(module, None)


@pytest.fixture
def plugin_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginFactory]:
    factory = PluginFactory(tmp_path, monkeypatch)
    yield factory
    factory.cleanup()


# The plugin module of the pipeline tests: the tools live in _pipetest_tools.
PIPETEST = """
from _pipetest_tools import pegboard_permission, pegboard_register_tools
"""


"""Plugin-declared hooks (``pegboard_add_hooks``) and the one dispatch
helper (``pegboard._loading.hooks``): one order, one place that calls pm.hook."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _plugin_factory import PluginFactory, plugin_factory  # noqa: F401
from pegboard import Toolbox

ROOT = Path(__file__).parents[3]

DECLARES = '''
from pegboard import Tool, hookimpl, hookspec

class Hooks:
    @hookspec
    def pegboard_greeting_words(self, name):
        """Words for a greeting."""

@hookimpl
def pegboard_add_hooks(add):
    add(Hooks)

WORDS = []

@hookimpl
def pegboard_register_tools(register, context):
    WORDS.extend(context.each("pegboard_greeting_words", name="Ada"))
'''

IMPLEMENTS = '''
from pegboard import hookimpl

@hookimpl
def pegboard_greeting_words(name):
    return ["hello", name]
'''


def test_a_plugin_declares_a_hook_another_implements(plugin_factory: PluginFactory) -> None:
    # "aaa" implements before "zzz" declares: declaring comes before any registering
    plugin_factory.write(IMPLEMENTS, name="aaa")
    plugin_factory.write(IMPLEMENTS.replace('["hello", name]', '["hi"]').replace(
        "pegboard_greeting_words(name)", "pegboard_greeting_words()"), name="bbb")
    declaring = plugin_factory.write(DECLARES, name="zzz")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["aaa", "bbb", "zzz"])
    assert all(r.error is None and r.warnings == [] for r in toolbox.records.values())
    outcomes = __import__(declaring).WORDS
    # pluggy's order: last registered first
    assert [(o.plugin, o.value, o.error) for o in outcomes] == [("bbb", ["hi"], None),
                                                                 ("aaa", ["hello", "Ada"], None)]


def test_an_implementation_is_checked_against_a_declared_spec(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(IMPLEMENTS.replace("(name)", "(nmae)"), name="aaa")
    plugin_factory.write(DECLARES, name="zzz")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["aaa", "zzz"])
    assert "nmae is not among the hook's arguments (name)" in (toolbox.records["aaa"].error or "")
    assert toolbox.records["zzz"].error is None


def test_a_hook_cannot_be_declared_twice(plugin_factory: PluginFactory) -> None:
    plugin_factory.write(DECLARES, name="first")
    plugin_factory.write(DECLARES, name="second")
    plugin_factory.write(DECLARES.replace("pegboard_greeting_words(self, name)", "pegboard_permission(self)"),
                         name="third")
    toolbox = Toolbox.load(cwd=plugin_factory.root, plugins=["first", "second", "third"])
    assert toolbox.records["first"].error is None
    assert "'pegboard_greeting_words' is already declared" in (toolbox.records["second"].error or "")
    assert "'pegboard_permission' is already declared" in (toolbox.records["third"].error or "")


def test_implementing_a_switched_off_plugins_hook_is_a_warning(plugin_factory: PluginFactory) -> None:
    toolbox = plugin_factory(IMPLEMENTS, name="aaa")
    assert toolbox.records["aaa"].error is None
    assert "pegboard_greeting_words" in toolbox.records["aaa"].warnings[0]
    assert "matches no hook specification" in toolbox.records["aaa"].warnings[0]


def test_the_builtins_declare_their_own_hooks() -> None:
    toolbox = Toolbox.load(cwd=ROOT, plugins=["fs", "web", "skills"])
    for hook in ("pegboard_file_read", "pegboard_summarize", "pegboard_skill_dirs"):
        assert toolbox.hooks.declared(hook)
    alone = Toolbox.load(cwd=ROOT, plugins=["shell"])
    assert not alone.hooks.declared("pegboard_file_read")


def test_only_the_dispatch_module_calls_pluggy() -> None:
    """tox's rule: one place calls pm.hook and implementations."""
    pattern = re.compile(r"get_hookimpls\(|impl\.function|pm\.hook\.|\.hook\.pegboard_")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "core").rglob("*.py")
                 if p.stem.lstrip("_") != "hooks" and pattern.search(p.read_text())]
    assert offenders == []


@pytest.mark.parametrize(("required", "error"), [
    ('"1.0"', None),
    ('"1.1"', None),
    ('"1"', None),
    ('"1.99"', "cannot load here: it requires plugin API 1.99; this pegboard has plugin API 1.1"),
    ('"2.0"', "cannot load here: it requires plugin API 2.0; this pegboard has plugin API 1.1"),
    ('"soon"', "cannot load here: PEGBOARD_API = 'soon' is not a version such as '1.0'"),
    ("1.0", "cannot load here: PEGBOARD_API must be a string such as '1.0', not 1.0"),
])
def test_a_plugin_can_require_a_plugin_api_version(plugin_factory: PluginFactory, required: str,
                                                    error: str | None) -> None:
    from pegboard import API_VERSION

    assert API_VERSION == "1.1"
    toolbox = plugin_factory(f"PEGBOARD_API = {required}\n" + IMPLEMENTS, name="versioned")
    assert toolbox.records["versioned"].error == error
    if error is not None:
        assert toolbox.plugins.pm.get_plugin("versioned") is None


def test_the_builtins_say_which_api_they_use() -> None:
    import importlib

    from pegboard import API_VERSION

    builtins = [p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").is_file()]
    assert len(builtins) >= 15
    for name in builtins:
        assert importlib.import_module(f"pegboard.plugins.{name}").PEGBOARD_API == API_VERSION


def test_host_implements_tells_hosts_from_plugins(tmp_path) -> None:
    """``PluginContext.host_implements``: a host given as a module or added
    later counts; a plugin given as an object with the same hook does not."""
    import types

    from pegboard import Toolbox, hookimpl

    class Plugin:
        @hookimpl
        def pegboard_event(self, kind, data):
            pass

    module = types.ModuleType("a_host")

    @hookimpl
    def pegboard_ask(request, decision):
        return None

    module.pegboard_ask = pegboard_ask
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["fs"], host=module, extra_plugins={"listens": Plugin()})
    context = toolbox.context_for("fs")
    assert context.host_implements("pegboard_ask")
    assert not context.host_implements("pegboard_event")  # only a plugin does

    class Later:
        @hookimpl
        def pegboard_event(self, kind, data):
            pass

    toolbox.add_host(Later(), name="later")
    assert context.host_implements("pegboard_event")
    assert not context.host_implements("pegboard_no_such_hook")


def _odd_module() -> object:
    """A module holding every kind of value pluggy's look-up tells apart."""
    import functools
    import types

    from pegboard import hookimpl, hookspec

    module = types.ModuleType("odd")

    @hookimpl
    def pegboard_marked() -> None: ...

    @hookspec
    def pegboard_spec() -> None: ...

    def plain() -> None: ...

    def borrows() -> None: ...

    def bad_marker() -> None: ...

    borrows.__func__ = pegboard_marked  # type: ignore[attr-defined]
    bad_marker.pegboard_impl = "not a dict"  # type: ignore[attr-defined]

    class Holder:
        @hookimpl
        def pegboard_method(self) -> None: ...

        @hookimpl
        def __repr__(self) -> str:  # a name the class's own type holds too
            return "Holder"

        @staticmethod
        @hookimpl
        def pegboard_static() -> None: ...

        @classmethod
        @hookimpl
        def pegboard_class(cls) -> None: ...

    values = {"pegboard_marked": pegboard_marked, "pegboard_spec": pegboard_spec, "plain": plain,
              "borrows": borrows, "bad_marker": bad_marker, "lambda_": hookimpl(lambda: None),
              "partial": functools.partial(pegboard_marked), "builtin": len, "Holder": Holder,
              "bound": Holder().pegboard_method, "static": vars(Holder)["pegboard_static"],
              "klass": vars(Holder)["pegboard_class"], "number": 3, "__annotations__": {}}
    vars(module).update(values)
    return module


def test_the_managers_module_look_up_answers_as_pluggys() -> None:
    """pegboard's plugin manager reads a module's functions from its
    dictionary; for every name of the built-in plugins, the hook
    specifications and a module of odd values it answers as pluggy does."""
    import importlib
    import types

    import pluggy

    from pegboard._loading.hooks import Manager

    ours, theirs = Manager("pegboard"), pluggy.PluginManager("pegboard")
    modules = [importlib.import_module(name) for name in (
        "pegboard._api.hookspecs", "pegboard.plugins.fs", "pegboard.plugins.fs._hookspecs", "pegboard.plugins.mcp",
        "pegboard.plugins.mcp._hookspecs", "pegboard.plugins.shell", "pegboard.plugins.skills",
        "pegboard.plugins.skills._hookspecs", "pegboard.plugins.subtasks", "pegboard.plugins.subtasks._hookspecs",
        "pegboard.plugins.web", "pegboard.plugins.web._hookspecs", "pegboard.plugins.schedule",
        "pegboard.plugins.schedule._hookspecs")]
    odd = _odd_module()

    class Lazy(types.ModuleType):
        pass

    lazy = Lazy("lazy")
    vars(lazy).update(vars(odd))
    holder = vars(odd)["Holder"]

    class Odd(holder):  # type: ignore[misc,valid-type]
        __slots__ = ("slot",)

        @property
        def pegboard_property(self) -> None: ...

    class Child(Odd):
        pass

    own = holder()
    own.pegboard_own = vars(odd)["pegboard_marked"]
    slotted = Child()
    slotted.slot = vars(odd)["pegboard_marked"]
    from pegboard._builtin.tools import CorePlugin
    from pegboard._loading.descriptions import PackageDescriptions

    found = 0
    for namespace in [*modules, odd, lazy, holder, own, slotted, CorePlugin(), PackageDescriptions()]:
        for name in dir(namespace):
            mine = ours.parse_hookimpl_opts(namespace, name)
            assert mine == theirs.parse_hookimpl_opts(namespace, name), (namespace, name)
            assert ours.parse_hookspec_opts(namespace, name) == theirs.parse_hookspec_opts(namespace, name), \
                (namespace, name)
            found += mine is not None
    assert found > 40

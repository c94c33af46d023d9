"""Keep the exported API and the hook documentation honest."""

from __future__ import annotations

import ast
import importlib
import re
import types
import typing
from pathlib import Path

import pytest

import pegboard
import pegboard.cli
import pegboard.paths
import pegboard.testing
from pegboard._api import hookspecs as _hookspecs

ROOT = Path(__file__).parents[2]


PUBLIC_MODULES = ("pegboard", "pegboard.paths", "pegboard.cli", "pegboard.testing")


def test_exported_names() -> None:
    assert pegboard.__all__ == sorted([
        "API_VERSION", "Absent", "Answer", "ApprovalsPage", "Approver", "CallEvent", "CallInfo", "CallStream", "Catalogue", "CatalogueTool", "Check", "Client", "CompiledRule",
        "ConfigError", "Content", "Decision", "Grant", "ImageContent", "InputFieldMatcher", "PageRequest", "PermissionRequest",
        "PluginCheck", "PluginContext", "PluginSession", "PluginStore", "Policy", "PreCall", "ResourceContent", "Rule", "RuleMatcher", "RuleSamples",
        "Session", "Settings", "StoreError", "SyncCallStream", "SyncSession", "StoreSchema", "TextContent", "Tool", "ToolContext", "ToolNamespace",
        "ToolResult",
        "Toolbox", "UserScope", "Vote", "check_plugin", "clamp_policy", "hookimpl", "hookspec", "policy_for",
    ])
    assert pegboard.paths.__all__ == sorted([
        "MultiplyLinked", "NotRegular", "PathChanged", "atomic_write", "config_dir", "data_dir", "gitignore_form",
        "is_git_dir", "is_within", "looks_like_git_dir", "open_dir", "relative_posix", "resolve_path", "walk_error",
    ])
    assert pegboard.cli.__all__ == sorted([
        "CLIState", "JSON", "MODE", "Progress", "claim_stdout", "current_state", "fail_config", "global_options",
        "progress", "terminal_host",
    ])
    assert pegboard.testing.__all__ == sorted([
        "Asked", "CLIRunner", "PegboardEnv", "PluginCheck", "PluginLoadError", "Project", "ScriptedHost", "StoreUpgrade",
        "call", "check_plugin", "decide", "isolate", "load_toolbox", "pegboard_call", "pegboard_check", "pegboard_cli",
        "pegboard_decide", "pegboard_env", "pegboard_host", "pegboard_installed", "pegboard_load",
        "pegboard_plugins", "pegboard_project", "pegboard_session", "pegboard_toolbox",
        "pegboard_upgrade",
    ])


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_exported_members(name: str) -> None:
    """As httpx's test: ``__all__`` is exactly the module's public namespace
    (submodules aside), so nothing public is unlisted or listed but absent."""
    module = importlib.import_module(name)
    for member in module.__all__:
        assert getattr(module, member) is not None
    public = {member for member in dir(module)
              if not member.startswith("_") and not isinstance(getattr(module, member), types.ModuleType)}
    assert sorted(public) == module.__all__


def test_exported_names_are_defined_in_private_modules() -> None:
    """The public modules only name things: the definitions live in private modules."""
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if typing.get_origin(value) is typing.Annotated:  # Content: a type alias
                value = typing.get_args(value)[0]
                defined = {getattr(arg, "__module__", "") for arg in typing.get_args(value)}
                assert all(m.startswith("pegboard._") for m in defined), (name, defined)
                continue
            if isinstance(value, type) or callable(value):
                # (JSON and MODE are click options, made in pegboard._cli.shared)
                assert value.__module__.startswith(("pegboard._", "pluggy.", "click.")), (name, value.__module__)


def _private_imports(path: Path, package: str) -> list[str]:
    """Every import in ``path`` of a private pegboard module, as ``file:line module``;
    ``package`` is the file's own package, for relative imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > len(base):
                    found.append(f"{path}:{node.lineno} relative import above the top level")
                    continue
                base = base[:len(base) - node.level + 1]
                modules = [".".join([*base, node.module] if node.module else base)]
            else:
                modules = [node.module or ""]
            modules += [f"{modules[0]}.{alias.name}" for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            modules = [str(node.args[0].value)]
        else:
            continue
        private = [m for m in modules if m.split(".")[0] == "pegboard" and m.split(".")[1:2] != []
                   and m.split(".")[1].startswith("_")]
        if private:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {private[0]}")
    return found


@pytest.mark.slow
def test_plugins_and_examples_import_only_the_public_api() -> None:
    """A built-in plugin is written exactly as a third party's would be:
    no ``pegboard._x`` import anywhere under plugins/ or examples/, not even
    for type checking."""
    files = [(path, "pegboard.plugins." + ".".join(path.relative_to(ROOT / "plugins").parts[:-1]))
             for path in (ROOT / "plugins").rglob("*.py")]
    files += [(path, ".".join(path.relative_to(ROOT / "examples").parts[:-1]))
              for path in (ROOT / "examples").rglob("*.py")]
    assert len(files) > 50
    offending = [line for path, package in files for line in _private_imports(path, package)]
    assert offending == []


def test_the_private_import_check_catches_each_form(tmp_path: Path) -> None:
    source = tmp_path / "plugins" / "demo" / "_x.py"
    source.parent.mkdir(parents=True)
    source.write_text("from pegboard._api.tools import Tool\n"
                      "import pegboard._util.path_facts\n"
                      "from pegboard import _config\n"
                      "from ... import _session\n"
                      "importlib.import_module('pegboard._cli.main')\n"
                      "from pegboard import Tool\n"
                      "from pegboard.paths import is_within\n"
                      "from . import _own\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = _private_imports(source, "pegboard.plugins.demo")
    finally:
        ROOT = saved
    assert [line.split(":")[1] for line in found] == ["1 pegboard._api.tools", "2 pegboard._util.path_facts",
                                                       "3 pegboard._config", "4 pegboard._session",
                                                       "5 pegboard._cli.main"]


@pytest.mark.parametrize(("old", "name", "new"), [
    ("pegboard._cli.main", "CLIState", "pegboard.cli.CLIState"),
    ("pegboard._api.decisions", "InputFieldMatcher", "pegboard.InputFieldMatcher"),
])
def test_what_the_docs_taught_still_imports_with_a_warning(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=re.escape(f"import {new} instead")) as caught:
        value = getattr(module, name)
    assert caught[0].filename == __file__  # points at the importer, not at pegboard
    public_module, _, public_name = new.rpartition(".")
    assert value is getattr(importlib.import_module(public_module), public_name)
    with pytest.raises(AttributeError):
        getattr(module, "NoSuchName")


def test_the_tool_fields_and_export_options_plugins_and_hosts_rely_on() -> None:
    """A tool declares its provider-native form (``native``) and what sub-agents
    get of it (``subagents``: a bool or an access); hosts export the native
    form by name (``to_anthropic(native=...)``) and grant sub-agents access
    (``Session.child(access=...)``); tools read it (``request.access``, ``ctx.access``)."""
    import inspect

    assert list(inspect.signature(pegboard.Tool).parameters) == [
        "name", "handler", "input_model", "input_schema", "read_only", "loading", "permission", "subagents",
        "description", "timeout_s", "lifts_caps_with_scratchpad", "plugin", "group", "title", "metadata",
        "offered_when", "permission_examples", "absent", "session_schema", "native", "vote"]
    tool = pegboard.Tool(name="Mem", handler="x:y", input_schema={"type": "object"}, subagents="read",
                         native={"anthropic": {"type": "some_type_20990101"}})
    assert tool.subagents == "read" and tool.native == {"anthropic": {"type": "some_type_20990101"}}
    to_anthropic = inspect.signature(pegboard.Catalogue.to_anthropic).parameters
    assert [(p.name, p.kind.name, p.default) for p in to_anthropic.values()][1:] == [
        ("defer_loading", "KEYWORD_ONLY", False), ("native", "KEYWORD_ONLY", ())]
    child = inspect.signature(pegboard.Session.child).parameters["access"]
    assert child.kind.name == "KEYWORD_ONLY" and child.default is None
    assert list(inspect.signature(pegboard.Session.access_to).parameters) == ["self", "tool"]
    assert isinstance(pegboard.PermissionRequest.access, property)
    assert isinstance(pegboard.ToolContext.access, property)


def test_vote_strongest_weighs_votes_as_the_engine_does() -> None:
    allow, ask, deny = pegboard.Vote.allow("a"), pegboard.Vote.ask("b"), pegboard.Vote.deny("c")
    assert pegboard.Vote.strongest([]) is None
    assert pegboard.Vote.strongest([allow, ask]) is ask
    assert pegboard.Vote.strongest([ask, deny, allow]) is deny
    second_ask = pegboard.Vote.ask("d")
    assert pegboard.Vote.strongest(iter([allow, ask, second_ask])) is ask  # the first of equals


def test_the_plugin_guide_gives_the_public_import_of_every_name() -> None:
    """docs/plugins.md's table names each public name with the import that
    gets it, and teaches no private module outside its deprecation note."""
    guide = (ROOT / "docs" / "plugins.md").read_text()
    table = guide.split("## The public API", 1)[1].split("\n## ", 1)[0]
    taught: dict[str, set[str]] = {}
    rows = "\n".join(line for line in table.splitlines() if line.startswith("|"))
    for module, names in re.findall(r"`from (pegboard(?:\.\w+)?) import ([^`]+)`", rows):
        taught.setdefault(module, set()).update(n.strip() for n in names.split(","))
    assert {module: sorted(names) for module, names in taught.items()} == {
        name: importlib.import_module(name).__all__ for name in PUBLIC_MODULES}
    outside = guide.replace(table, "")
    assert "pegboard._" not in outside


def hook_names() -> list[str]:
    """The core's hooks and those the built-in plugins declare."""
    from pegboard.plugins.fs import _hookspecs as fs_hooks
    from pegboard.plugins.skills import _hookspecs as skills_hooks
    from pegboard.plugins.subtasks import _hookspecs as subtasks_hooks
    from pegboard.plugins.web import _hookspecs as web_hooks

    return [name for module in (_hookspecs, fs_hooks, skills_hooks, subtasks_hooks, web_hooks)
            for name in dir(module) if name.startswith("pegboard_")]


def test_every_hook_is_documented_with_an_example() -> None:
    guide = (ROOT / "docs" / "plugins.md").read_text()
    for name in hook_names():
        assert re.search(rf"^### `{name}", guide, re.M), f"{name} has no heading in docs/plugins.md"


def test_every_hook_is_exercised_by_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    plugins = "\n".join(p.read_text() for p in (ROOT / "plugins").rglob("*.py"))
    for name in hook_names():
        assert name in tests or name in plugins, f"nothing exercises {name}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_a_literal_list(name: str) -> None:
    """Type checkers take only a literal ``__all__`` as a module's explicit exports: a computed one
    makes ``mypy --strict`` in a plugin author's project report every public name as not exported."""
    module = importlib.import_module(name)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    [value] = [node.value for node in tree.body if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
    assert isinstance(value, ast.List) and all(isinstance(e, ast.Constant) for e in value.elts), name
    assert [e.value for e in value.elts] == sorted(module.__all__)  # type: ignore[attr-defined]
    if name == "pegboard":
        assert set(module.__all__) == {*module._LAZY, "API_VERSION", "hookimpl", "hookspec"}

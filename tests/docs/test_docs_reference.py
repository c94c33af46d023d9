"""The reference (docs/reference/, built by mkdocs with mkdocstrings from the
docstrings) covers every public name a plugin touches, every public member
of those has a docstring (mkdocstrings leaves out members without one), and
the strict build fails on a cross-reference to a name that does not exist.
The whole site is built by .ci/run (``mkdocs build --strict``)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import pegboard
import pegboard.cli
import pegboard.paths
import pegboard.testing

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
# Written about as a whole, not with a ::: directive: a type alias and pluggy's two markers.
PROSE = {"Content", "hookimpl", "hookspec"}


def hooks_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


INTEGRATIONS = ("pydantic_ai", "openai_agents", "langchain", "claude_agent_sdk")


def directives() -> set[str]:
    return {m.group(1) for page in REFERENCE.glob("*.md")
            for m in re.finditer(r"^::: ([\w.]+)$", page.read_text(), re.M)}


def test_every_public_name_has_a_reference_entry() -> None:
    shown = directives()
    prose = "\n".join(p.read_text() for p in REFERENCE.glob("*.md"))
    missing = [n for n in pegboard.__all__ if f"pegboard.{n}" not in shown and n not in PROSE]
    assert missing == [], "public names with no ::: entry in docs/reference/*.md"
    assert all(f"pegboard.{n}" in prose for n in PROSE)
    assert {"pegboard.paths", "pegboard.cli", "pegboard.testing", "pegboard._api.hookspecs"} <= shown
    assert {f"pegboard.integrations.{a}" for a in INTEGRATIONS} <= shown


def test_every_page_is_in_the_nav() -> None:
    # (the strict build in .ci/run fails on a page left out; this says so in the test run already)
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]

    def pages(entry: Any) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [p for item in entry for p in pages(item)]
        return [p for value in entry.values() for p in pages(value)]

    listed = set(pages(nav))
    docs = ROOT / "docs"
    # and the pages mkdocs_hooks.py writes at build time (the command-line and configuration references)
    found = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")} | set(hooks_module().GENERATED_PAGES)
    assert sorted(found - listed) == [], "pages missing from mkdocs.yml's nav"
    assert sorted(listed - found) == [], "nav entries with no page"


def spec_modules() -> set[str]:
    """The modules every hook specification of a toolbox with all the built-in plugins comes from."""
    from pegboard import Toolbox

    return {caller.spec.namespace.__name__ for name, caller in vars(Toolbox.load().hook).items()
            if name.startswith("pegboard_") and getattr(caller, "spec", None) is not None}


def test_every_hook_specification_is_in_the_reference() -> None:
    modules = spec_modules()
    assert "pegboard._api.hookspecs" in modules and len(modules) > 1
    assert sorted(modules - directives()) == [], "hook specifications missing from docs/reference/hooks.md"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import griffe

    layout = hooks_module().lay_out(ROOT, tmp_path_factory.mktemp("griffe"))
    return griffe.GriffeLoader(search_paths=[str(layout)]).load("pegboard")


def _undocumented(obj: Any) -> list[str]:
    target = obj.final_target if obj.is_alias else obj
    missing = [] if target.docstring else [target.path]
    if target.is_class:
        for name, member in target.members.items():
            if name.startswith("_") or member.is_alias or name == "model_config":
                continue
            if not member.docstring:
                missing.append(f"{target.path}.{name}")
    return missing


@pytest.mark.slow
def test_every_public_member_a_plugin_touches_has_a_docstring(package: Any) -> None:
    roots = [package[n] for n in pegboard.__all__ if n not in PROSE]
    roots += [package["paths"][n] for n in pegboard.paths.__all__]
    roots += [package["cli"][n] for n in pegboard.cli.__all__]
    roots += [package["testing"][n] for n in pegboard.testing.__all__ if n not in pegboard.__all__]
    for adapter in INTEGRATIONS:  # read from the source: their frameworks need not be installed
        module = package["integrations"][adapter]
        roots += [module[n] for n in module.exports or ()]
    for module in spec_modules():
        found = package[module.removeprefix("pegboard.")]
        roots += [m for n, m in found.members.items() if n.startswith("pegboard_")]
    missing = [path for root in roots for path in _undocumented(root)]
    # mkdocstrings leaves a member without a docstring out of the reference
    assert missing == [], "public names and members with no docstring (a line under an attribute counts)"


def _build(tmp_path: Path, page: str) -> subprocess.CompletedProcess[str]:
    """The real mkdocs.yml (theme, plugins, strict validation) on a one-page site."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "index.md").write_text(page)
    config.pop("nav")
    config.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"),
                  hooks=[str(ROOT / "mkdocs_hooks.py")])
    # a layout not made yet, as in a fresh clone: the hook must make it before mkdocstrings looks
    config["plugins"][-1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(tmp_path / "griffe")]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    # the mkdocs script, as `uv run mkdocs` runs it (its folder, with a `pegboard` script, first on sys.path)
    mkdocs = Path(sys.executable).parent / "mkdocs"
    return subprocess.run([str(mkdocs), "build", "--strict", "-f", str(tmp_path / "mkdocs.yml")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.mark.slow
def test_the_strict_build_fails_on_a_broken_cross_reference(tmp_path: Path) -> None:
    good = "# Votes\n\nA plugin returns a [vote][pegboard.Vote].\n\n::: pegboard.Vote\n"
    built = _build(tmp_path, good)
    assert built.returncode == 0, built.stderr
    assert "pegboard.Vote.firm" in (tmp_path / "site" / "index.html").read_text()
    assert (tmp_path / "griffe" / "pegboard" / "__init__.py").is_file()
    broken = _build(tmp_path, good.replace("[pegboard.Vote]", "[pegboard.Voet]"))
    assert broken.returncode != 0
    assert "pegboard.Voet" in broken.stderr

"""Skill sources, precedence between them, the listing budget and search."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pluggy
import pytest

from pegboard._api import hookspecs as _hookspecs
from pegboard._api.hookspecs import PROJECT
from pegboard.plugins.skills._catalog import (
    PRECEDENCE,
    default_sources,
    listing,
    load_catalog,
    plugin_skill_dirs,
)
from pegboard.plugins.skills._search import search, skill_files


def make_skill(folder: Path, name: str, description: str = "", body: str = "Body.\n", extra: str = "") -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description or 'About ' + name}\n{extra}---\n{body}",
                    encoding="utf-8")
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> SimpleNamespace:
    ns = SimpleNamespace(config=tmp_path / "config", root=tmp_path / "project", plugin=tmp_path / "plugin-skills")
    ns.user = ns.config / "skills"
    ns.project = ns.root / ".pegboard" / "skills"
    return ns


def test_each_source_alone(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "mine")
    make_skill(dirs.project, "repo")
    make_skill(dirs.plugin, "shipped")
    catalog = load_catalog(default_sources(dirs.config, dirs.root, [("acme", dirs.plugin)], trusted=True))
    assert {s.name: (s.source, s.origin) for s in catalog} == {
        "mine": ("user", "user"),
        "repo": ("project", "project"),
        "shipped": ("plugin", "plugin:acme"),
    }
    assert catalog.shadowed == [] and catalog.broken == []


def test_an_untrusted_project_s_skills_are_not_a_source(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "mine")
    make_skill(dirs.project, "repo")
    assert [s.name for s in load_catalog(default_sources(dirs.config, dirs.root))] == ["mine"]
    assert [s.name for s in load_catalog(default_sources(dirs.config, dirs.root, trusted=True))] == ["mine", "repo"]


def test_a_project_skills_folder_that_links_out_of_the_project_is_not_read(dirs: SimpleNamespace,
                                                                           tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    make_skill(elsewhere, "planted")
    dirs.project.parent.mkdir(parents=True)
    dirs.project.symlink_to(elsewhere)
    catalog = load_catalog(default_sources(dirs.config, dirs.root, trusted=True))
    assert list(catalog) == [] and "resolves outside the project" in catalog.broken[0].reason


def test_missing_source_folders_are_not_errors(dirs: SimpleNamespace) -> None:
    catalog = load_catalog(default_sources(dirs.config, dirs.root, trusted=True))
    assert list(catalog) == [] and catalog.broken == []


def test_precedence_user_over_project_over_plugin(dirs: SimpleNamespace) -> None:
    assert PRECEDENCE == ("user", "project", "plugin")
    make_skill(dirs.user, "deploy", "user version")
    make_skill(dirs.project, "deploy", "project version")
    make_skill(dirs.plugin, "deploy", "plugin version")
    make_skill(dirs.project, "lint", "project lint")
    make_skill(dirs.plugin, "lint", "plugin lint")
    catalog = load_catalog(default_sources(dirs.config, dirs.root, [("acme", dirs.plugin)], trusted=True))
    assert catalog.get("deploy").description == "user version"  # type: ignore[union-attr]
    assert catalog.get("lint").description == "project lint"  # type: ignore[union-attr]
    shadowed = {(s.skill.name, s.skill.origin, s.by.origin) for s in catalog.shadowed}
    assert shadowed == {("deploy", "project", "user"), ("deploy", "plugin:acme", "user"),
                        ("lint", "plugin:acme", "project")}


def test_name_from_front_matter_not_folder(dirs: SimpleNamespace) -> None:
    # Two folders, one name: the first (by folder name) wins, the other is shadowed.
    path = make_skill(dirs.user, "a-folder")
    path.write_text("---\nname: same\ndescription: first\n---\nx\n", encoding="utf-8")
    path = make_skill(dirs.user, "b-folder")
    path.write_text("---\nname: same\ndescription: second\n---\nx\n", encoding="utf-8")
    catalog = load_catalog(default_sources(dirs.config, dirs.root, trusted=True))
    assert catalog.get("same").description == "first"  # type: ignore[union-attr]
    assert [s.skill.description for s in catalog.shadowed] == ["second"]


def test_broken_skill_reported_and_others_load(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "good")
    bad = dirs.user / "bad" / "SKILL.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("---\nname: bad\ndescription: [oops\n---\n", encoding="utf-8")
    lower = dirs.project / "lower" / "skill.md"
    lower.parent.mkdir(parents=True)
    lower.write_text("---\nname: lower\ndescription: d\n---\n", encoding="utf-8")
    (dirs.project / "not-a-skill").mkdir()
    catalog = load_catalog(default_sources(dirs.config, dirs.root, trusted=True))
    assert [s.name for s in catalog] == ["good"]
    reasons = {str(b.path): b.reason for b in catalog.broken}
    assert "not valid YAML" in reasons[str(bad)]
    assert "SKILL.md (upper case)" in reasons[str(lower.parent)]
    assert len(catalog.broken) == 2


def test_hidden_folders_and_files_are_skipped(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, ".deleting-old")
    dirs.user.mkdir(parents=True, exist_ok=True)
    (dirs.user / "README.md").write_text("not a skill", encoding="utf-8")
    assert list(load_catalog(default_sources(dirs.config, dirs.root, trusted=True))) == []


def test_symlinked_skill_folder_loads(dirs: SimpleNamespace, tmp_path: Path) -> None:
    make_skill(tmp_path / "elsewhere", "linked")
    dirs.user.mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere" / "linked", dirs.user / "linked")
    assert [s.name for s in load_catalog(default_sources(dirs.config, dirs.root, trusted=True))] == ["linked"]


class _Shipper:
    def __init__(self, folder: Path):
        self.folder = folder

    @pluggy.HookimplMarker(PROJECT)
    def pegboard_skill_dirs(self) -> list[Path]:
        return [self.folder]


class _Broken:
    @pluggy.HookimplMarker(PROJECT)
    def pegboard_skill_dirs(self) -> list[Path]:
        raise RuntimeError("boom")


def test_plugin_hook_attributes_folders_and_isolates_failures(tmp_path: Path) -> None:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(_hookspecs)  # the core's spec: checks our implementations' signatures
    pm.register(_Shipper(tmp_path / "b"), name="zeta")
    pm.register(_Shipper(tmp_path / "a"), name="alpha")
    pm.register(_Broken(), name="oops")
    found, broken = plugin_skill_dirs(pm.hook)
    assert found == [("alpha", tmp_path / "a"), ("zeta", tmp_path / "b")]
    assert [(b.origin, "boom" in b.reason) for b in broken] == [("plugin:oops", True)]


def test_plugin_hook_absent() -> None:
    assert plugin_skill_dirs(None) == ([], [])
    assert plugin_skill_dirs(SimpleNamespace()) == ([], [])


def test_listing_fits_budget_and_counts_the_rest(dirs: SimpleNamespace) -> None:
    for i in range(40):
        make_skill(dirs.plugin, f"plug-{i:02d}", "x" * 100)
    make_skill(dirs.user, "zz-mine", "the person's own")
    catalog = load_catalog(default_sources(dirs.config, dirs.root, [("acme", dirs.plugin)], trusted=True))
    text = listing(catalog, 1000)
    assert len(text) <= 1000
    lines = text.splitlines()
    # The person's own skill comes first even though it sorts last by name.
    assert lines[0] == "- zz-mine: the person's own"
    shown = sum(1 for line in lines if line.startswith("- "))
    assert lines[-1] == f"({41 - shown} more skills are not listed here; SkillSearch finds them.)"
    assert 1 < shown < 41


def test_listing_everything_when_it_fits_and_long_descriptions_clipped(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "a", "y" * 400)
    make_skill(dirs.user, "b", "short")
    text = listing(load_catalog(default_sources(dirs.config, dirs.root, trusted=True)), 4000)
    assert text.splitlines()[1] == "- b: short"
    assert text.splitlines()[0].endswith("…") and len(text.splitlines()[0]) == len("- a: ") + 250
    assert "more" not in text


def test_listing_hides_person_only_skills(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "secret", extra="disable-model-invocation: true\n")
    assert listing(load_catalog(default_sources(dirs.config, dirs.root, trusted=True)), 4000) == "No skills are installed."


def test_search_bodies_and_shipped_files_with_file_and_line(dirs: SimpleNamespace, tmp_path: Path) -> None:
    path = make_skill(dirs.user, "pdf", "PDF tools", body="Intro\nUse pdftotext for extraction\n")
    (path.parent / "reference.md").write_text("one\ntwo: extraction tips\n", encoding="utf-8")
    (path.parent / "blob.bin").write_bytes(b"extraction\x00\x01")
    (path.parent / ".hidden.md").write_text("extraction", encoding="utf-8")
    make_skill(dirs.project, "other", body="nothing here\n")
    outside = tmp_path / "outside.md"
    outside.write_text("extraction outside", encoding="utf-8")
    os.symlink(outside, path.parent / "escape.md")
    catalog = load_catalog(default_sources(dirs.config, dirs.root, trusted=True))
    matches, more = search(catalog, re.compile("extraction"), 100)
    assert not more
    assert [(m.path.name, m.line) for m in matches] == [("SKILL.md", 6), ("reference.md", 2)]
    assert matches[0].format() == f"{path}:6: Use pdftotext for extraction"
    # Front matter lines are searchable too.
    matches, _ = search(catalog, re.compile("^description: PDF"), 100)
    assert [(m.skill, m.line) for m in matches] == [("pdf", 3)]


def test_search_limit_reports_more(dirs: SimpleNamespace) -> None:
    make_skill(dirs.user, "many", body="hit\n" * 10)
    matches, more = search(load_catalog(default_sources(dirs.config, dirs.root, trusted=True)), re.compile("hit"), 3)
    assert len(matches) == 3 and more


def test_skill_files_lists_skill_md_first(dirs: SimpleNamespace) -> None:
    path = make_skill(dirs.user, "s")
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "a.sh").write_text("echo", encoding="utf-8")
    (path.parent / "A.md").write_text("a", encoding="utf-8")
    skill = load_catalog(default_sources(dirs.config, dirs.root, trusted=True)).get("s")
    assert [p.relative_to(path.parent).as_posix() for p in skill_files(skill)] == [  # type: ignore[arg-type]
        "SKILL.md", "A.md", "scripts/a.sh"]

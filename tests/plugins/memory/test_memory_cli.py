"""``pegboard memory list|show|delete|export``: the person's own memories, on
SQLite and the real PostgreSQL, for the current project's set or all of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard.plugins.memory import use_person
from pegboard.testing import CLIRunner

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def remember(root: Path, person: str | None = None, **files: str) -> None:
    session = Toolbox.load(cwd=root, plugins=["memory"]).session("default")
    if person is not None:
        use_person(session, person)
    for name, text in files.items():
        made = await session.call("memory", {"command": "create", "path": f"/memories/{name.replace('__', '/')}",
                                             "file_text": text})
        assert not made.is_error, made.text_content()


async def test_list_show_delete_export(tmp_path: Path, store_url: str, user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.memory]\nperson = "ada"\n')
    runner = CLIRunner(tmp_path, installed=["memory"])
    await remember(tmp_path, "someone-else", theirs_md="not ada's")
    empty = runner("memory", "list")
    assert empty.exit_code == 0 and "ada's memories: 0 files, 0 bytes" in empty.stdout, empty.output
    await remember(tmp_path, style_md="tabs\n", people__bob_md="Bob: prefers email\n")

    listed = runner("memory", "list")
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert lines[0] == "ada's memories: 2 files, 24 bytes"
    assert lines[1].endswith("/memories/people/bob_md") and lines[2].endswith("/memories/style_md")
    assert "theirs" not in listed.stdout
    as_json = json.loads(runner("memory", "list", "--json").stdout)
    assert as_json["person"] == "ada" and [f["path"] for f in as_json["sets"][0]["files"]] == [
        "/memories/people/bob_md", "/memories/style_md"]

    shown = runner("memory", "show", "/memories/style_md")
    assert shown.exit_code == 0 and shown.stdout == "tabs\n"
    assert runner("memory", "show", "people/bob_md").stdout == "Bob: prefers email\n"
    folder = runner("memory", "show", "people")
    assert folder.exit_code == 0 and "/memories/people/bob_md" in folder.stdout
    missing = runner("memory", "show", "nope.md")
    assert missing.exit_code == 1 and "The path /memories/nope.md does not exist" in missing.stderr
    outside = runner("memory", "show", "/memories/../x")
    assert outside.exit_code == 2 and "is refused" in outside.output

    exported = json.loads(runner("memory", "export").stdout)
    assert exported["sets"][0]["files"] == [
        {"path": "/memories/people/bob_md", "content": "Bob: prefers email\n", "size": 19,
         "updated_at": exported["sets"][0]["files"][0]["updated_at"]},
        {"path": "/memories/style_md", "content": "tabs\n", "size": 5,
         "updated_at": exported["sets"][0]["files"][1]["updated_at"]}]

    deleted = runner("memory", "delete", "people", "/memories/nope")
    assert deleted.exit_code == 1, deleted.output
    assert "deleted /memories/people" in deleted.stdout and "/memories/nope does not exist" in deleted.stderr
    assert [f["path"] for f in json.loads(runner("memory", "list", "--json").stdout)["sets"][0]["files"]] == [
        "/memories/style_md"]


async def test_all_sets_with_scope_project(tmp_path: Path, store_url: str,
                                           user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.memory]\nperson = "ada"\nscope = "project"\n')
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    await remember(one, here_md="one")
    await remember(two, here_md="two", also_md="2")
    runner = CLIRunner(one, installed=["memory"])
    assert runner("memory", "show", "here_md").stdout == "one"
    mine = json.loads(runner("memory", "export").stdout)
    assert [s["project_root"] for s in mine["sets"]] == [str(one)]
    every = json.loads(runner("memory", "export", "--all").stdout)
    assert sorted((s["project_root"], len(s["files"])) for s in every["sets"]) == [(str(one), 1), (str(two), 2)]
    listed = runner("memory", "list", "--all").stdout
    assert f"ada's memories in {one}: 1 file" in listed and f"ada's memories in {two}: 2 files" in listed
    runner("memory", "delete", "here_md")
    assert CLIRunner(two, installed=["memory"])("memory", "show", "here_md").stdout == "two"


def test_nothing_stored_yet(tmp_path: Path) -> None:
    runner = CLIRunner(tmp_path, installed=["memory"])
    assert "No memories (the store is not created yet)." in runner("memory", "list").stdout
    assert json.loads(runner("memory", "export").stdout)["sets"] == []

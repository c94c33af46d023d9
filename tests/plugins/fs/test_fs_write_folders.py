"""Write makes the missing parent folders of a file inside the working
directories (as Claude Code's Write does), decided as any Write is; outside
them nothing is created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard.testing import PegboardEnv, ScriptedHost

pytestmark = pytest.mark.anyio


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    return root


async def test_write_makes_the_missing_folders_inside(proj: Path) -> None:
    session = Toolbox.load(cwd=proj, plugins=["fs"]).session("acceptEdits")
    target = proj / "src" / "pkg" / "mod.py"
    result = await session.call("Write", {"file_path": str(target), "content": "x = 1\n"})
    assert not result.is_error, result.text_content()
    assert target.read_text() == "x = 1\n"
    assert f"(Created the folders {proj / 'src'}, {proj / 'src' / 'pkg'}.)" in result.text_content()
    # one folder missing: named alone
    again = await session.call("Write", {"file_path": str(proj / "src" / "tests" / "t.py"), "content": ""})
    assert again.text_content().endswith(f"(Created the folder {proj / 'src' / 'tests'}.)")


async def test_it_still_asks_as_a_write_does(proj: Path) -> None:
    host = ScriptedHost(False, True)
    session = Toolbox.load(cwd=proj, plugins=["fs"], host=host).session("default")
    target = proj / "new" / "f.txt"
    refused = await session.call("Write", {"file_path": str(target), "content": "x"})
    assert refused.is_error and not (proj / "new").exists()  # denied: no folder either
    assert [a.request.tool.name for a in host.asks] == ["Write"]
    made = await session.call("Write", {"file_path": str(target), "content": "x"})
    assert not made.is_error and target.read_text() == "x" and len(host.asks) == 2


async def test_outside_the_working_directories_nothing_is_created(proj: Path, tmp_path: Path,
                                                                   pegboard_env: PegboardEnv) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    pegboard_env.user_config(f'[permissions]\nallow = ["Write(/{outside}/**)"]\n')
    session = Toolbox.load(cwd=proj, plugins=["fs"]).session("default")
    result = await session.call("Write", {"file_path": str(outside / "a" / "b.txt"), "content": "x"})
    assert result.is_error, result.text_content()
    assert "creates missing folders only inside the working directories" in result.text_content()
    assert os.listdir(outside) == []
    # the folder there: the rule lets it write
    (outside / "a").mkdir()
    assert not (await session.call("Write", {"file_path": str(outside / "a" / "b.txt"), "content": "x"})).is_error


async def test_a_link_in_the_path_is_not_followed(proj: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (proj / "link").symlink_to(outside)
    session = Toolbox.load(cwd=proj, plugins=["fs"]).session("acceptEdits")
    result = await session.call("Write", {"file_path": str(proj / "link" / "new" / "f.txt"), "content": "x"})
    assert result.is_error  # it resolves outside: asked, and nobody here to answer
    assert os.listdir(outside) == []


async def test_edit_does_not_make_folders(proj: Path) -> None:
    session = Toolbox.load(cwd=proj, plugins=["fs"]).session("acceptEdits")
    result = await session.call("Edit", {"file_path": str(proj / "no" / "f.txt"), "old_string": "a",
                                         "new_string": "b"})
    assert result.is_error and "Use Write to create a new file" in result.text_content()
    assert not (proj / "no").exists()

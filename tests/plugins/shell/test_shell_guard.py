"""The box keeps what the file tools protect: real bubblewrap, real files.

Every protected path in the writable folders is read-only in the box, at any
depth (nested repositories, a worktree's git directory); what the box cannot
keep (a home folder's missing dotfile, a protected name that is a link) takes
the sandbox's auto-allow away, so the command asks.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl
from pegboard._api.decisions import PermissionRequest
from pegboard.plugins.shell import _guard
from pegboard.plugins.shell._config import ShellConfig
from pegboard.plugins.shell._guard import guard
from pegboard.plugins.shell._permission import sandbox_plan
from pegboard.plugins.shell._sandbox import backend_for
from pegboard.paths import is_within

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(backend_for("bubblewrap") != "bubblewrap", reason="needs bubblewrap")]


class Host:
    """Says yes to every ask, and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asked.append(f"{request.input.get('command')}: {decision.reason}")
        return Answer(allow=True)


def load(root: Path, tmp_path: Path, host: Host | None = None, **permissions: Any) -> Toolbox:
    cfg = tmp_path / "guard.toml"
    lines = [f"{k} = {json.dumps(v)}" for k, v in permissions.items()]
    cfg.write_text('[plugins.shell]\nsandbox = "bubblewrap"\n\n[permissions]\n' + "\n".join(lines) + "\n")
    # (the mcp plugin adds .mcp.json to the protected paths)
    return Toolbox.load(cwd=root, plugins=["shell", "mcp"], host=host or Host(), config=cfg)


def decide(tb: Toolbox, command: str, mode: str = "acceptEdits") -> Any:
    session = tb.session(mode=mode)
    request = PermissionRequest(tool=tb.tools["Bash"], input={"command": command}, session=session,
                                policy=session.policy)
    return tb.permissions.evaluate(request)


PROBE = """\
import errno, os, pathlib, shutil, sys
def attempt(what, action):
    try:
        action()
        print(what, "CHANGED")
    except OSError as exc:
        print(what, errno.errorcode.get(exc.errno, "OSError"))
def write(name, text="evil\\n"):
    return lambda: (pathlib.Path(name).parent.mkdir(parents=True, exist_ok=True), pathlib.Path(name).write_text(text))
def append(name):
    return lambda: open(name, "a").write("[core]\\n\\tfsmonitor = /tmp/evil\\n")
for what, action in [
    ("ordinary", write("src/new.py")),
"""


def probe(attempts: list[tuple[str, str]]) -> str:
    """A script trying each (label, python expression of an action), then an
    ordinary write that must work (the box ran, and it is writable)."""
    body = "".join(f"    ({label!r}, {action}),\n" for label, action in attempts)
    return PROBE + body + "]:\n    attempt(what, action)\n"


def outcome(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line.count(" ") == 1)


async def run_probe(tb: Toolbox, root: Path, attempts: list[tuple[str, str]]) -> tuple[dict[str, str], str]:
    """Run ``probe(attempts)`` through Bash in ``root``: each label's outcome, and the whole output."""
    (root / "probe.py").write_text(probe(attempts))
    s = tb.session(mode="acceptEdits")
    try:
        r = await s.call("Bash", {"command": "python3 probe.py"})
    finally:
        await s.aclose()
    return outcome(r.text_content()), r.text_content()


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A project with protected paths at every depth, and a linked worktree
    whose git directory lies in the project under another name."""
    root = (tmp_path / "proj").resolve()
    for folder in (".git/hooks", "vendor/lib/.git/hooks", "apps/web/.vscode", "tools/env", "src",
                   "gitdirs/wt", "wt"):
        (root / folder).mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "vendor" / "lib" / ".git" / "config").write_text("[core]\n")
    (root / "apps" / "web" / ".vscode" / "tasks.json").write_text("{}\n")
    (root / "tools" / "env" / ".envrc").write_text("export A=1\n")
    (root / ".mcp.json").write_text("{}\n")
    (root / "gitdirs" / "wt" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "wt" / ".git").write_text(f"gitdir: {root / 'gitdirs' / 'wt'}\n")
    (root / ".gitmodules").write_text("")
    # Git directories under other names, made by git itself: a bare mirror and a
    # separate git dir (its work tree's .git file points at it).
    subprocess.run(["git", "init", "-q", "--bare", str(root / "mirror.git")], check=True)
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={root / 'sepgit'}", str(root / "sep")], check=True)
    return root


NESTED_ATTEMPTS = [
    ("new-hook", "write('.git/hooks/pre-commit', '#!/bin/sh\\n')"),
    ("git-config", "append('.git/config')"),
    ("nested-new-hook", "write('vendor/lib/.git/hooks/post-checkout', '#!/bin/sh\\n')"),
    ("nested-config", "append('vendor/lib/.git/config')"),
    ("nested-remove", "lambda: shutil.rmtree('vendor/lib/.git')"),
    ("nested-rename", "lambda: os.rename('vendor/lib/.git', 'vendor/lib/old-git')"),
    ("vscode-task", "write('apps/web/.vscode/tasks.json')"),
    ("vscode-new", "write('apps/web/.vscode/settings.json')"),
    ("envrc", "write('tools/env/.envrc')"),
    ("mcp", "write('.mcp.json')"),
    ("gitmodules", "write('.gitmodules')"),
    ("pegboard", "write('.pegboard/config.toml', 'allow = [\"Bash\"]\\n')"),
    ("worktree-gitdir", "write('gitdirs/wt/hooks/pre-commit', '#!/bin/sh\\n')"),
    ("worktree-gitfile", "write('wt/.git', 'gitdir: /tmp/elsewhere\\n')"),
    ("mirror-hook", "write('mirror.git/hooks/post-receive', '#!/bin/sh\\n')"),
    ("mirror-config", "append('mirror.git/config')"),
    ("separate-gitdir-config", "append('sepgit/config')"),
]


async def test_protected_paths_at_any_depth_are_read_only_in_the_box(nested: Path, tmp_path: Path) -> None:
    host = Host()
    tb = load(nested, tmp_path, host)
    assert decide(tb, "python3 probe.py").decision == "allow"  # the box guards it all: it runs unasked
    got, text = await run_probe(tb, nested, NESTED_ATTEMPTS)
    assert host.asked == [], host.asked
    assert got.pop("ordinary") == "CHANGED", text  # the box ran, and the project is writable
    assert set(got) == {label for label, _ in NESTED_ATTEMPTS}, text
    # a read-only mount (EROFS), or a mount point that cannot be removed or renamed (EBUSY)
    assert set(got.values()) <= {"EROFS", "EBUSY"}, got
    assert (nested / "src" / "new.py").exists()
    assert (nested / ".git" / "config").read_text() == "[core]\n"
    assert (nested / "vendor" / "lib" / ".git" / "config").read_text() == "[core]\n"
    assert not (nested / "vendor" / "lib" / ".git" / "hooks" / "post-checkout").exists()
    assert (nested / "apps" / "web" / ".vscode" / "tasks.json").read_text() == "{}\n"
    assert not (nested / ".pegboard" / "config.toml").exists()
    assert (nested / "wt" / ".git").read_text().startswith(f"gitdir: {nested}")
    assert not (nested / "mirror.git" / "hooks" / "post-receive").exists()
    assert "fsmonitor" not in (nested / "mirror.git" / "config").read_text()
    assert "fsmonitor" not in (nested / "sepgit" / "config").read_text()


async def test_the_same_writes_go_through_without_the_guard(nested: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: with the guard emptied, the same box lets every one of
    those writes through (so what stops them is the guard, not something else)."""
    monkeypatch.setattr("pegboard.plugins.shell._permission.guard", lambda *a, **k: _guard.Guard())
    got, _ = await run_probe(load(nested, tmp_path), nested, [a for a in NESTED_ATTEMPTS if a[0] != "nested-rename"])
    assert set(got.values()) == {"CHANGED"}, got


async def test_each_working_directory_gets_its_pegboard_folder_before_a_command(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    extra = (tmp_path / "other").resolve()
    root.mkdir()
    extra.mkdir()
    tb = load(root, tmp_path, additional_directories=[str(extra)])
    assert not (root / ".pegboard").exists() and not (extra / ".pegboard").exists()
    assert decide(tb, "python3 -c 1").decision == "allow"  # deciding changes nothing on disk
    assert not (root / ".pegboard").exists()
    s = tb.session(mode="acceptEdits")
    try:
        r = await s.call("Bash", {"command": f"mkdir -p {extra}/.pegboard && echo x > {extra}/.pegboard/config.toml;"
                                             " echo ran"})
    finally:
        await s.aclose()
    assert "ran" in r.text_content()
    assert (root / ".pegboard").is_dir() and (extra / ".pegboard").is_dir()
    assert not (extra / ".pegboard" / "config.toml").exists(), r.text_content()


def _home_names(home: Path) -> None:
    """Every protected name a home folder could have, as the file or folder it is."""
    for folder in (".git", ".pegboard", ".vscode", ".config/fish", ".ssh"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    for name in (".gitmodules", ".mcp.json", ".envrc", ".bashrc", ".bash_profile", ".bash_login", ".profile",
                 ".zshrc", ".zprofile", ".zshenv", ".gitconfig"):
        (home / name).write_text("# mine\n")


async def test_a_writable_home_keeps_its_dotfiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the home folder a working directory, its dotfiles are read-only in
    the box; a dotfile it lacks could be created there, so the command asks."""
    home = (tmp_path / "home").resolve()
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    tb = load(home, tmp_path)
    d = decide(tb, "python3 -c 1")
    assert d.decision == "ask" and "does not exist" in d.reason and str(home) in d.reason, d
    plan = sandbox_plan(*_with_state(tb.session(mode="acceptEdits")), ShellConfig(sandbox="bubblewrap"), disable=False)
    assert plan is not None and not plan.safe and home / ".bashrc" in plan.box.readonly
    _home_names(home)
    tb = load(home, tmp_path)
    assert decide(tb, "python3 -c 1").decision == "allow"
    attempts = [("bashrc", "append('.bashrc')"), ("zshenv", "write('.zshenv')"),
                ("authorized_keys", "write('.ssh/authorized_keys')"), ("fish", "write('.config/fish/config.fish')"),
                ("gitconfig", "append('.gitconfig')"), ("replace-profile", "lambda: os.replace('src/new.py', '.profile')")]
    got, text = await run_probe(tb, home, attempts)
    assert got.pop("ordinary") == "CHANGED", text
    assert set(got) == {a for a, _ in attempts} and set(got.values()) <= {"EROFS", "EBUSY"}, got
    assert (home / ".bashrc").read_text() == (home / ".profile").read_text() == "# mine\n"
    assert not (home / ".ssh" / "authorized_keys").exists()


def test_a_protected_name_that_is_a_link_cannot_be_kept(nested: Path, tmp_path: Path) -> None:
    (nested / "real-envrc").write_text("export A=1\n")
    (nested / "apps" / ".envrc").symlink_to(nested / "real-envrc")
    d = decide(load(nested, tmp_path), "python3 -c 1")
    assert d.decision == "ask" and "symbolic link" in d.reason and str(nested / "apps" / ".envrc") in d.reason, d


def test_too_many_entries_to_look_through_means_asking(nested: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tb = load(nested, tmp_path)
    assert decide(tb, "python3 -c 1").decision == "allow"
    monkeypatch.setattr(_guard, "MAX_ENTRIES", 5)
    d = decide(load(nested, tmp_path), "python3 -c 1")
    assert d.decision == "ask" and "too many" in d.reason, d


def test_the_walk_is_kept_and_sees_every_change(nested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second look lists only folders whose times changed; a repository
    cloned into the project between two commands is found."""
    monkeypatch.setattr(_guard, "_RACY_NS", 0)  # the test's folders are all brand new
    listed: list[str] = []
    real = os.scandir

    def counting(path: Any) -> Any:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(_guard.os, "scandir", counting)
    session = load(nested, tmp_path).session(mode="acceptEdits")
    first = guard(session, session.plugin_state("shell"), (nested,))
    assert nested / "vendor" / "lib" / ".git" in first.paths and first.unguarded is None
    assert len(listed) > 5
    listed.clear()
    assert guard(session, session.plugin_state("shell"), (nested,)) == first and listed == []
    (nested / "src" / "dep" / ".git").mkdir(parents=True)
    third = guard(session, session.plugin_state("shell"), (nested,))
    assert nested / "src" / "dep" / ".git" in third.paths
    assert sorted(listed) == [str(nested / "src"), str(nested / "src" / "dep")]


def test_a_folder_changed_within_the_clock_tick_is_listed_again(nested: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(_guard.os, "scandir", lambda p: (listed.append(str(p)), real(p))[1])
    session = load(nested, tmp_path).session(mode="acceptEdits")
    guard(session, session.plugin_state("shell"), (nested,))
    listed.clear()
    guard(session, session.plugin_state("shell"), (nested,))
    assert str(nested) in listed  # its times are too recent to trust: a change now would not move them


def test_a_git_directory_under_any_name_is_found_by_its_layout_and_kept_whole(
        nested: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare mirror and a separate git dir are bound whole, not entry by
    entry; a folder that becomes a git directory after the first walk (its
    HEAD added later, the folder above unchanged) is found on the next."""
    monkeypatch.setattr(_guard, "_RACY_NS", 0)
    (nested / "later").mkdir()
    session = load(nested, tmp_path).session(mode="acceptEdits")
    first = guard(session, session.plugin_state("shell"), (nested,))
    assert nested / "mirror.git" in first.paths and nested / "sepgit" in first.paths
    assert not any(is_within(p, nested / "mirror.git") and p != nested / "mirror.git" for p in first.paths)
    assert not any(is_within(p, nested / "later") for p in first.paths)
    subprocess.run(["git", "init", "-q", "--bare", str(nested / "later")], check=True)
    assert nested / "later" in guard(session, session.plugin_state("shell"), (nested,)).paths


async def test_a_protected_path_a_command_creates_is_said_in_its_result(tmp_path: Path) -> None:
    """``git init sub`` in the box makes sub/.git with hooks of the command's
    choosing, which no mount could cover (it did not exist). The box cannot
    stop it; the result says so, naming the path, and the next command's box
    keeps it read-only. A command that creates nothing protected hears nothing."""
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    tb = load(root, tmp_path)
    s = tb.session(mode="acceptEdits")
    try:
        plain = await s.call("Bash", {"command": "mkdir -p src && echo made > src/a.txt && echo ok"})
        assert "ok" in plain.text_content() and "could not keep read-only" not in plain.text_content()
        made = await s.call("Bash", {"command": "git init -q sub && mkdir -p sub/.git/hooks && "
                                                "printf '#!/bin/sh\\n' > sub/.git/hooks/pre-commit && echo planted"})
        text = made.text_content()
        assert "planted" in text and (root / "sub" / ".git" / "hooks" / "pre-commit").exists()  # the gap is real
        assert f"This command created {root / 'sub' / '.git'}" in text and "could not keep read-only" in text
        again = await s.call("Bash", {"command": "echo x >> sub/.git/hooks/pre-commit; echo after"})
        assert "after" in again.text_content() and "Read-only file system" in again.text_content()
        assert "could not keep read-only" not in again.text_content()
    finally:
        await s.aclose()


def _with_state(session):
    """A session and the shell plugin's state in it (``sandbox_plan``'s first two arguments)."""
    return session, session.plugin_state("shell")

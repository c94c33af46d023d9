"""A repository whose own config tries to run code: read-only git must not run it."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox

pytestmark = pytest.mark.anyio



def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def poisoned(tmp_path: Path) -> tuple[Path, Path]:
    repo = (tmp_path / "repo").resolve()
    repo.mkdir()
    marker = (tmp_path / "markers").resolve()
    marker.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    (repo / "pic.bin").write_text("binary\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    evil = tmp_path / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}/ran\ncat\n')
    evil.chmod(0o755)
    for key, value in {
        "core.fsmonitor": str(evil),
        "core.pager": str(evil),
        "pager.log": str(evil),
        "core.hooksPath": str(tmp_path),
        "diff.external": str(evil),
        "filter.x.clean": str(evil),
        "filter.x.smudge": str(evil),
        "filter.x.process": str(evil),
        "diff.y.textconv": str(evil),
        "diff.y.command": str(evil),
        "gpg.program": str(evil),
        "log.showSignature": "true",
    }.items():
        git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("*.txt filter=x\n*.bin diff=y\n")
    # Change the files so diff and status must look at their content.
    (repo / "a.txt").write_text("one\ntwo\n")
    (repo / "pic.bin").write_text("binary2\n")
    return repo, marker / "ran"


READ_ONLY_GIT = [
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git log -p -1",
    "git log --format='%H %G?' -1",
    "git show HEAD",
    "git log --oneline -5 && git diff HEAD -- pic.bin",
]


def test_control_the_poisoned_repo_does_run_code(poisoned: tuple[Path, Path]) -> None:
    # Without the hardening the same commands run the script: the test below can fail.
    repo, marker = poisoned
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True)
    subprocess.run(["git", "status"], cwd=repo, capture_output=True)
    assert marker.exists()


@pytest.fixture
async def session(poisoned: tuple[Path, Path], tmp_path: Path) -> AsyncIterator[Any]:
    repo, _ = poisoned
    cfg = tmp_path / "cfg.toml"
    # No sandbox: the git hardening alone must hold.
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    tb = Toolbox.load(cwd=repo, plugins=["shell"], config=cfg)
    s = tb.session(mode="default")
    yield s
    await s.aclose()


@pytest.mark.parametrize("command", READ_ONLY_GIT)
async def test_read_only_git_runs_no_repository_code(session: Any, poisoned: tuple[Path, Path],
                                                     command: str) -> None:
    _, marker = poisoned
    r = await session.call("Bash", {"command": command})
    # Allowed without asking (no host is there to ask), and it ran.
    assert "needs approval" not in r.text_content(), r.text_content()
    assert r.structured_content is not None
    assert not marker.exists(), marker.read_text()


async def test_git_status_still_reports_changes(session: Any) -> None:
    r = await session.call("Bash", {"command": "git status --short"})
    assert "a.txt" in r.text_content() and "pic.bin" in r.text_content()


def test_a_work_tree_moved_outside_makes_git_ask(tmp_path: Path) -> None:
    from pegboard._decisions import PermissionRequest

    repo = (tmp_path / "moved").resolve()
    repo.mkdir()
    elsewhere = (tmp_path / "home-of-secrets").resolve()
    elsewhere.mkdir()
    (elsewhere / "id_rsa").write_text("PRIVATE KEY\n")
    git(repo, "init", "-q")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    tb = Toolbox.load(cwd=repo, plugins=["shell"], config=cfg)
    s = tb.session(mode="default")

    def decide(command: str) -> str:
        req = PermissionRequest(tool=tb.tools["Bash"], input={"command": command}, session=s, policy=s.policy)
        return tb.permissions.evaluate(req).decision

    assert decide("git status") == "allow"
    # The repository's own config points git at another directory, whose files git diff would print.
    git(repo, "config", "core.worktree", str(elsewhere))
    assert decide("git status") == "ask"
    assert decide("git diff") == "ask"


def test_a_git_file_naming_another_repository_makes_git_ask(tmp_path: Path) -> None:
    from pegboard._decisions import PermissionRequest

    private = (tmp_path / "private").resolve()
    private.mkdir()
    git(private, "init", "-q")
    (private / "secret.txt").write_text("s3cret\n")
    git(private, "add", ".")
    git(private, "commit", "-qm", "secret")
    proj = (tmp_path / "proj").resolve()
    proj.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)
    s = tb.session(mode="default")
    req = lambda c: PermissionRequest(tool=tb.tools["Bash"], input={"command": c}, session=s,  # noqa: E731
                                      policy=s.policy)
    assert tb.permissions.evaluate(req("git log -p")).decision == "allow"  # not a repository: nothing to read
    (proj / ".git").write_text(f"gitdir: {private / '.git'}\n")
    assert tb.permissions.evaluate(req("git log -p")).decision == "ask"

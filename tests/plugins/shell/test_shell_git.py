"""A repository whose own config tries to run code: read-only git must not run it."""

from __future__ import annotations

import os
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


@pytest.mark.slow
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
    from pegboard._api.decisions import PermissionRequest

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
    from pegboard._api.decisions import PermissionRequest

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


# --- a partial clone whose missing objects are fetched by a command it chose --


@pytest.fixture
def lazy_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make a partial clone (blobs left on the server) whose config fetches a
    missing blob with code of its own choosing: ``vector`` "uploadpack"
    (``protocol.file.allow = always`` plus ``remote.origin.uploadpack``),
    "ext" (``protocol.ext.allow = always`` and an ``ext::`` remote) or
    "helper" (a remote helper installed on the machine, ``git-remote-pbtest``,
    unlocked with ``protocol.pbtest.allow = always``). Each call makes a fresh
    clone: a fetch that got through fills the blob in."""
    server = (tmp_path / "server").resolve()
    server.mkdir()
    git(server, "init", "-q")
    (server / "big.txt").write_text("the blob\n")
    git(server, "add", ".")
    git(server, "commit", "-qm", "one")
    git(server, "config", "uploadpack.allowFilter", "true")
    git(server, "config", "uploadpack.allowAnySHA1InWant", "true")
    marker = tmp_path / "fetched-with-repository-code"
    count = iter(range(100))
    helpers = tmp_path / "bin"  # on PATH, outside the working directories, as an installed helper is
    helpers.mkdir()
    (helpers / "git-remote-pbtest").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (helpers / "git-remote-pbtest").chmod(0o755)
    monkeypatch.setenv("PATH", f"{helpers}:{os.environ['PATH']}")

    def make(vector: str) -> tuple[Path, Path]:
        clone = (tmp_path / f"clone{next(count)}").resolve()
        git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{server}", str(clone))
        marker.unlink(missing_ok=True)
        if vector == "uploadpack":
            git(clone, "config", "protocol.file.allow", "always")
            git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
        elif vector == "ext":
            git(clone, "config", "protocol.ext.allow", "always")
            git(clone, "config", "remote.origin.url", f"ext::sh -c touch% {marker};git-upload-pack% {server}")
        else:
            git(clone, "config", "protocol.pbtest.allow", "always")
            git(clone, "config", "remote.origin.url", "pbtest::anything")
        return clone, marker

    return make


def _git_version() -> tuple[int, ...]:
    out = subprocess.run(["git", "version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(x) for x in out.split()[2].split(".")[:2])


VECTORS = ["uploadpack", "ext", "helper"]


@pytest.mark.parametrize("vector", VECTORS)
async def test_a_lazy_fetch_runs_no_repository_code(lazy_clone: Any, tmp_path: Path, vector: str) -> None:
    clone, marker = lazy_clone(vector)
    # The control: plain git, as the person would run it, runs the repository's command.
    shown = subprocess.run(["git", "show", "HEAD:big.txt"], cwd=clone, capture_output=True, text=True)
    assert marker.exists() and ("the blob" in shown.stdout or vector == "helper"), shown.stderr
    clone, marker = lazy_clone(vector)
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')  # the git hardening alone must hold
    tb = Toolbox.load(cwd=clone, plugins=["shell"], config=cfg)
    s = tb.session(mode="default")
    try:
        for command in ("git show HEAD:big.txt", "git log -p -1", "git diff HEAD~0 --stat", "git cat-file -p HEAD:big.txt"):
            r = await s.call("Bash", {"command": command})
            assert "needs approval" not in r.text_content(), r.text_content()  # read-only: it ran, unasked
            assert not marker.exists(), command
        assert "the blob" not in r.text_content()
    finally:
        await s.aclose()


# Each layer of the lazy-fetch hardening, by what it adds to git's environment.
_LAYERS = {
    "GIT_NO_LAZY_FETCH": lambda name, key: name == "GIT_NO_LAZY_FETCH",
    "GIT_ALLOW_PROTOCOL": lambda name, key: name == "GIT_ALLOW_PROTOCOL",
    "protocol.<name>.allow": lambda name, key: key is not None and key.startswith("protocol."),
}


def _only(env: dict[str, str], keep: str | None) -> dict[str, str]:
    """``env`` with every lazy-fetch layer taken out except ``keep``."""
    def is_layer(name: str, key: str | None) -> str | None:
        return next((layer for layer, test in _LAYERS.items() if test(name, key)), None)

    out = {k: v for k, v in env.items() if not k.startswith("GIT_CONFIG_") or k == "GIT_CONFIG_GLOBAL"
           or k == "GIT_CONFIG_NOSYSTEM"}
    out = {k: v for k, v in out.items() if is_layer(k, None) in (None, keep)}
    pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(int(env["GIT_CONFIG_COUNT"]))]
    pairs = [(k, v) for k, v in pairs if is_layer("", k) in (None, keep)]
    out["GIT_CONFIG_COUNT"] = str(len(pairs))
    for i, (k, v) in enumerate(pairs):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = k, v
    return out


@pytest.mark.parametrize("layer", list(_LAYERS))
@pytest.mark.parametrize("vector", VECTORS)
def test_each_lazy_fetch_layer_holds_on_its_own(lazy_clone: Any, vector: str, layer: str) -> None:
    """Layers overlap on purpose; each one alone must stop the fetch, and with
    all of them taken out the same environment fetches (so the layers, and
    nothing else in it, are what stops it). There is no uploadpack layer: git
    keeps the first ``remote.<name>.uploadpack`` it reads, the repository's,
    over any ``-c`` (it says "more than one uploadpack given, using the first")."""
    from pegboard.plugins.shell._git import git_safe_env
    from pegboard.plugins.shell._runner import base_env

    if layer == "GIT_NO_LAZY_FETCH" and _git_version() < (2, 44):
        pytest.skip(f"git {'.'.join(map(str, _git_version()))} does not know GIT_NO_LAZY_FETCH (2.44+)")
    clone, marker = lazy_clone(vector)
    env = git_safe_env(base_env([clone]), [clone])
    subprocess.run(["git", "show", "HEAD:big.txt"], cwd=clone, env=_only(env, None), capture_output=True)
    assert marker.exists()  # the control: without the layers, the fetch runs the repository's command
    clone, marker = lazy_clone(vector)
    env = git_safe_env(base_env([clone]), [clone])
    shown = subprocess.run(["git", "show", "HEAD:big.txt"], cwd=clone, env=_only(env, layer), capture_output=True,
                           text=True)
    assert not marker.exists() and "the blob" not in shown.stdout, (layer, shown.stderr)

"""Credentials are hidden in the box: what a command runs unasked cannot print them.

``cat ~/.ssh/id_rsa | base64`` is not a line the classifier can read (base64
is not on its list), so it runs in the box without a prompt. The box hides
where credentials live, pegboard's own folders and what operators add; the
controls run the same line unconfined and see every secret.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Toolbox, hookimpl
from pegboard.paths import config_dir, data_dir
from pegboard.plugins.shell._sandbox import backend_for

from _trusted import trust

pytestmark = pytest.mark.anyio

SECRETS = {
    ".ssh/id_rsa": "SECRET-SSH-KEY",
    ".aws/credentials": "SECRET-AWS",
    ".gnupg/private-keys-v1.d/k.key": "SECRET-GPG",
    ".config/gh/hosts.yml": "SECRET-GH",
    ".netrc": "SECRET-NETRC",
    ".docker/config.json": "SECRET-DOCKER",
    ".kube/config": "SECRET-KUBE",
    ".config/gcloud/credentials.db": "SECRET-GCLOUD",
    ".pypirc": "SECRET-PYPI",
    ".npmrc": "SECRET-NPM",
    ".git-credentials": "SECRET-GIT-CREDENTIALS",
    "notes/vault-token.txt": "SECRET-OPERATOR",
    "notes/project-added.txt": "SECRET-PROJECT-ADDED",
}
ORDINARY = {"notes/readme.txt": "ORDINARY-HOME-FILE", ".config/other/settings": "ORDINARY-CONFIG"}


class Host:
    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asked.append(decision.reason)
        return Answer(allow=True)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder full of secrets. Not under /tmp: the box has a /tmp of
    its own, and a home there would be invisible in it, secrets or not."""
    home = Path(tempfile.mkdtemp(prefix="pegboard-home-", dir="/var/tmp")).resolve()
    for name, text in {**SECRETS, **ORDINARY}.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text + "\n")
    monkeypatch.setenv("HOME", str(home))
    # pegboard's own folders in it too (the isolated ones are under /tmp)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    (data_dir() / "tokens").mkdir(parents=True)
    (data_dir() / "tokens" / "oauth.json").write_text("SECRET-PEGBOARD-DATA\n")
    yield home
    shutil.rmtree(home)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    (root / "mine.txt").write_text("ORDINARY-PROJECT-FILE\n")
    return root


def load(proj: Path, tmp_path: Path, sandbox: str, host: Host, deny: list[str] = (), trusted: bool = True,
         project_deny: list[str] = ()) -> Toolbox:
    user = config_dir() / "config.toml"  # the user's own layer adds one path...
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('# an MCP token an operator keeps here: SECRET-PEGBOARD-CONFIG\n'
                    '[plugins.shell]\nhidden_paths = ["~/notes/vault-token.txt"]\n')
    project = proj / ".pegboard" / "config.toml"  # ...and a later layer cannot take it back, only add
    project.parent.mkdir(exist_ok=True)
    project.write_text(f'[permissions]\ndeny = {json.dumps(list(project_deny))}\n\n'
                       '[plugins.shell]\nhidden_paths = ["~/notes/project-added.txt"]\n')
    if trusted:  # a plugin option from a project applies once the person trusts the folder
        trust(proj)
    cfg = tmp_path / "explicit.toml"
    cfg.write_text(f'[plugins.shell]\nsandbox = "{sandbox}"\n\n[permissions]\ndeny = {json.dumps(list(deny))}\n')
    return Toolbox.load(cwd=proj, plugins=["shell", "fs"], host=host, config=cfg)


def _line(proj: Path) -> str:
    # pegboard's folders through links of the project's own: a line naming
    # them asks anyway, and the box must hide what the link resolves to.
    for link, target in (("cfg", config_dir()), ("data", data_dir())):
        if not (proj / link).is_symlink():
            (proj / link).symlink_to(target)
    reads = " ".join(f"~/{name}" for name in {**SECRETS, **ORDINARY})
    return (f"cat mine.txt; for f in {reads}; do base64 $f | base64 -d; done; "
            "cat data/tokens/oauth.json cfg/config.toml 2>&1; echo end")


async def _run(tb: Toolbox, command: str, mode: str) -> str:
    s = tb.session(mode=mode)
    try:
        r = await s.call("Bash", {"command": command})
    finally:
        await s.aclose()
    return r.text_content()


def _secret_words(text: str) -> set[str]:
    return {w for w in text.split() if w.startswith("SECRET-")}


@pytest.mark.parametrize("backend, mode", [("bubblewrap", "acceptEdits"), ("landlock", "read")])
async def test_credentials_are_hidden_from_a_command_run_unasked(home: Path, proj: Path, tmp_path: Path,
                                                                 backend: str, mode: str) -> None:
    if backend_for(backend) != backend:
        pytest.skip(f"{backend} not available")
    host = Host()
    # Read(~/.ssh/id_rsa) names a path inside a hidden folder: the box hides the folder once.
    tb = load(proj, tmp_path, backend, host, deny=["Read(~/.ssh/id_rsa)"])
    out = await _run(tb, _line(proj), mode)
    assert host.asked == [], host.asked  # not read word by word, yet allowed: it runs in the box
    assert "ORDINARY-PROJECT-FILE" in out and "end" in out, out  # the box ran, and reads what is not hidden
    assert "ORDINARY-HOME-FILE" in out and "ORDINARY-CONFIG" in out, out
    assert _secret_words(out) == set(), out
    # The control: the same line, unconfined (asked, and approved), prints every one of them.
    unboxed = await _run(load(proj, tmp_path, "off", Host()), _line(proj), "default")
    expected = {*SECRETS.values(), "SECRET-PEGBOARD-CONFIG", "SECRET-PEGBOARD-DATA"}
    assert _secret_words(unboxed) == expected, unboxed


@pytest.mark.parametrize("backend, mode", [("bubblewrap", "acceptEdits"), ("landlock", "read")])
async def test_the_hosts_password_hashes_are_hidden(proj: Path, tmp_path: Path, backend: str, mode: str) -> None:
    if backend_for(backend) != backend:
        pytest.skip(f"{backend} not available")
    if not os.access("/etc/shadow", os.R_OK):
        pytest.skip("/etc/shadow is not readable here, boxed or not")
    first = Path("/etc/shadow").read_text().splitlines()[0]
    out = await _run(load(proj, tmp_path, backend, Host()), "cat mine.txt; base64 /etc/shadow | base64 -d", mode)
    assert "ORDINARY-PROJECT-FILE" in out and first not in out, out
    assert first in await _run(load(proj, tmp_path, "off", Host()), "base64 /etc/shadow | base64 -d", "default")


def test_the_launcher_grants_reading_around_what_it_hides(tmp_path: Path) -> None:
    from pegboard.plugins.shell._landlock import read_grants

    root = tmp_path.resolve()
    for name in ("a/secret/x", "a/open/y", "a/z", "b/w"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "a" / "link").symlink_to(root / "a" / "secret")
    grants = read_grants([str(root / "a" / "secret")])
    assert str(root / "a" / "open") in grants and str(root / "a" / "z") in grants and str(root / "b") in grants
    for refused in (root / "a" / "secret", root / "a", root, root / "a" / "link", Path("/")):
        assert str(refused) not in grants
    assert read_grants([]) == ["/"] and read_grants([str(root / "missing")]) == ["/"]


async def test_a_deny_rule_over_a_hidden_folder_still_starts_the_box(home: Path, proj: Path, tmp_path: Path) -> None:
    """``Read(~/.config/**)`` hides a folder that holds default ones
    (``~/.config/gh``): the box hides the outer one only, since a mount
    inside a hidden (empty, read-only) folder has nothing to land on."""
    if backend_for("bubblewrap") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    tb = load(proj, tmp_path, "bubblewrap", Host(), deny=["Read(~/.config/**)"])
    out = await _run(tb, "cat mine.txt; base64 ~/.config/gh/hosts.yml ~/.config/other/settings | base64 -d", "acceptEdits")
    assert "ORDINARY-PROJECT-FILE" in out and "SECRET" not in out and "ORDINARY-CONFIG" not in out, out


async def test_an_untrusted_project_hides_with_deny_rules(home: Path, proj: Path, tmp_path: Path) -> None:
    """An untrusted checkout's plugin options are not applied, its
    ``hidden_paths`` among them; its ``Read`` deny rules are (they only
    narrow), and the box hides what they name."""
    if backend_for("bubblewrap") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    line = "cat mine.txt; base64 ~/notes/project-added.txt | base64 -d"
    out = await _run(load(proj, tmp_path, "bubblewrap", Host(), trusted=False), line, "acceptEdits")
    assert "SECRET-PROJECT-ADDED" in out and "hidden_paths" in out, out  # not applied, and the result says so
    tb = load(proj, tmp_path, "bubblewrap", Host(), trusted=False, project_deny=["Read(~/notes/project-added.txt)"])
    out = await _run(tb, line, "acceptEdits")
    assert "ORDINARY-PROJECT-FILE" in out and "SECRET-PROJECT-ADDED" not in out, out

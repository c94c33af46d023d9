"""Path rule specifiers for the fs tools, through the real permission engine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard._loading.config import ConfigError

pytestmark = pytest.mark.anyio



@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    for rel in ("docs/guide.md", "src/app.py", ".env", "secret/key.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"content of {rel}\n")
    (root / "alias").symlink_to(root / "secret")
    return root


def _load(proj: Path, tmp_path: Path, **rules: list[str]) -> Any:
    cfg = tmp_path / "rules.toml"
    body = "[permissions]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in rules.items())
    cfg.write_text(body)
    return Toolbox.load(cwd=proj, plugins=["fs"], config=cfg)


async def test_deny_read_rule_on_resolved_path(proj: Path, tmp_path: Path) -> None:
    s = _load(proj, tmp_path, deny=["Read(./.env)", "Read(secret/**)"]).session(mode="default")
    for path in (proj / ".env", proj / "secret" / "key.txt", proj / "alias" / "key.txt", "secret/../.env"):
        r = await s.call("Read", {"file_path": str(path)})
        assert r.is_error and "denied by Read(" in r.text_content(), path
    r = await s.call("Read", {"file_path": str(proj / "src" / "app.py")})
    assert not r.is_error
    await s.aclose()


async def test_a_newline_in_a_folder_name_does_not_slip_past_a_deny_rule(proj: Path, tmp_path: Path) -> None:
    """gitignore's "**" in pathspec is ".*", which stops at a newline; a model
    can make a folder named "a<newline>b" and put a .env under it."""
    odd = proj / "a\nb"
    odd.mkdir()
    (odd / ".env").write_text("SECRET=1\n")
    (odd / "id.pem").write_text("key\n")
    deny = ["Read(**/.env)", "Read(*.pem)", "Read(a*/id.pem)"]
    s = _load(proj, tmp_path, deny=deny).session(mode="default")
    for raw in (str(odd / ".env"), "a\nb/.env", str(odd / "id.pem")):
        r = await s.call("Read", {"file_path": raw})
        assert r.is_error and "denied by Read(" in r.text_content(), raw
        assert "SECRET" not in r.text_content()
    # each rule alone as well: the engine combines rules of one kind into one lookup
    for rule in deny:
        alone = _load(proj, tmp_path, deny=[rule]).session(mode="default")
        target = odd / (".env" if "env" in rule else "id.pem")
        r = await alone.call("Read", {"file_path": str(target)})
        assert r.is_error and f"denied by {rule}" in r.text_content(), rule
        await alone.aclose()
    await s.aclose()


async def test_allow_edit_rule_lets_edits_run_in_default_mode(proj: Path, tmp_path: Path) -> None:
    s = _load(proj, tmp_path, allow=["Edit(docs/**)"]).session(mode="default")
    guide, app = proj / "docs" / "guide.md", proj / "src" / "app.py"
    await s.call("Read", {"file_path": str(guide)})
    await s.call("Read", {"file_path": str(app)})
    r = await s.call("Edit", {"file_path": str(guide), "old_string": "content", "new_string": "text"})
    assert not r.is_error, r.text_content()
    r = await s.call("Edit", {"file_path": str(app), "old_string": "content", "new_string": "text"})
    assert r.is_error and app.read_text().startswith("content")
    await s.aclose()


async def test_absolute_allow_rule_opens_an_outside_folder(proj: Path, tmp_path: Path) -> None:
    outside = (tmp_path / "shared").resolve()
    outside.mkdir()
    (outside / "data.txt").write_text("shared data\n")
    s = _load(proj, tmp_path, allow=[f"Read(/{outside}/**)"]).session(mode="default")
    r = await s.call("Read", {"file_path": str(outside / "data.txt")})
    assert not r.is_error and "shared data" in r.text_content()
    r = await s.call("Read", {"file_path": str(tmp_path / "rules.toml")})
    assert r.is_error
    await s.aclose()


async def test_protected_path_is_not_waved_through_by_an_allow_rule(proj: Path, tmp_path: Path) -> None:
    (proj / ".git").mkdir()
    s = _load(proj, tmp_path, allow=["Edit(//**)", "Write"]).session(mode="acceptEdits")
    r = await s.call("Write", {"file_path": str(proj / ".git" / "config"), "content": "x"})
    assert r.is_error and not (proj / ".git" / "config").exists()
    await s.aclose()


def test_bad_specifier_is_a_config_error(proj: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\.\."):
        _load(proj, tmp_path, deny=["Read(../elsewhere/**)"])


def test_matcher_covers_like_claude_code(proj: Path) -> None:
    # Edit rules cover every writer and Read rules every reader, as the matcher decides
    from pegboard._api.decisions import PermissionRequest, Rule
    from pegboard.plugins.fs._vote import FsRuleMatcher

    tb = Toolbox.load(cwd=proj, plugins=["fs"])
    s = tb.session(mode="default")

    def req(tool: str, **inp: Any) -> PermissionRequest:
        return PermissionRequest(tool=tb.tools[tool], input=inp, session=s, policy=s.policy)

    edit = FsRuleMatcher(Rule.parse("Edit(docs/**)", "allow", "t", proj), proj)
    assert edit.matches(req("Write", file_path=str(proj / "docs" / "n.md")))
    assert edit.matches(req("NotebookEdit", notebook_path=str(proj / "docs" / "n.ipynb")))
    assert not edit.matches(req("Read", file_path=str(proj / "docs" / "guide.md")))
    read = FsRuleMatcher(Rule.parse("Read(./secret/**)", "deny", "t", proj), proj)
    assert read.matches(req("Grep", pattern="x", path=str(proj / "secret")))
    assert read.matches(req("Glob", pattern="*", path=str(proj / "alias")))
    assert not read.matches(req("Grep", pattern="x", path=str(proj / "src")))
    # an unusable path fails closed: deny rules match it, allow rules do not
    assert read.matches(req("Read", file_path="bad\x00path"))
    allow = FsRuleMatcher(Rule.parse("Read(//**)", "allow", "t", proj), proj)
    assert not allow.matches(req("Read", file_path="bad\x00path"))


async def test_edit_rule_covers_write_end_to_end(proj: Path, tmp_path: Path) -> None:
    s = _load(proj, tmp_path, allow=["Edit(docs/**)"], deny=["Read(./secret/**)"]).session(mode="default")
    r = await s.call("Write", {"file_path": str(proj / "docs" / "new.md"), "content": "x"})
    assert not r.is_error
    r = await s.call("Grep", {"pattern": "content", "path": str(proj / "secret")})
    assert r.is_error
    await s.aclose()


@pytest.mark.parametrize("backend", ["python", "rg"])
async def test_deny_read_rule_keeps_grep_and_glob_out(proj: Path, tmp_path: Path, backend: str) -> None:
    import shutil

    if backend == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep (rg) is not installed")
    cfg = tmp_path / "rules.toml"
    cfg.write_text(f'[permissions]\ndeny = ["Read(./.env)", "Read(secret/**)"]\n'
                   f'[plugins.fs]\nsearch_backend = "{backend}"\n')
    s = Toolbox.load(cwd=proj, plugins=["fs"], config=cfg).session(mode="default")
    # a glob that names the file would whitelist it for ripgrep; the deny rule must still win
    for args in ({"pattern": "content", "glob": ".env", "output_mode": "content"},
                 {"pattern": "content", "output_mode": "content", "glob": "*"},
                 {"pattern": "content", "path": str(proj / "alias")}):
        r = await s.call("Grep", args)
        text = r.text_content()
        assert "content of .env" not in text and "content of secret" not in text, (args, text)
    r = await s.call("Grep", {"pattern": "content", "output_mode": "content"})
    assert "content of src/app.py" in r.text_content()
    r = await s.call("Glob", {"pattern": "**/*"})
    assert "key.txt" not in r.text_content() and "app.py" in r.text_content()
    r = await s.call("Glob", {"pattern": ".env"})
    assert ".env" not in r.text_content().replace("'.env'", "")
    await s.aclose()


@pytest.mark.parametrize(("spec", "fixed"), [
    ("./.env", ".env"), ("/secrets/", "secrets"), ("secrets/**", "secrets"), ("src/x.py", "src/x.py"),
    ("./dir/sub/**", "dir/sub"), (".env", None), ("*.pem", None), ("docs/*.md", None), ("a/**/b", None),
    ("//**", None), ("secrets/", None), ("x\\*y", None),
])
def test_a_rule_names_one_path_only_when_it_is_no_pattern(proj: Path, spec: str, fixed: str | None) -> None:
    """What a sandbox can hide or guard: the one path a rule names (all below
    it too), never a pattern, which matches names a mount cannot follow."""
    from pegboard.plugins.fs._pathrule import PathRule

    got = PathRule(spec, proj).fixed()
    assert got == (None if fixed is None else proj / fixed)
    assert PathRule("~/.aws/**", proj).fixed() == Path(os.path.realpath(os.path.expanduser("~/.aws")))
    assert PathRule("//etc/passwd", proj).fixed() == Path(os.path.realpath("/etc/passwd"))

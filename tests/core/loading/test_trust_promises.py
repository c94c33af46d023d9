"""Promises of the trust layer that no test held (issue 29): each test here
fails when the one-line bug it names is put back."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from _trusted import trust
from pegboard._loading.config import ConfigError, config_dir, load_settings
from pegboard._loading.grants import append_grant
from pegboard._engine.permissions.protected import protected_patterns
from pegboard._loading.trust import project_grants_file, project_key
from pegboard.testing import PegboardEnv


def checkout(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / ".pegboard" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return Path(os.path.realpath(root))


# --- an untrusted checkout may switch plugins off, never on -------------------


def test_an_untrusted_checkout_cannot_switch_on_a_plugin_the_person_switched_off(pegboard_env: PegboardEnv,
                                                                                 tmp_path: Path) -> None:
    # Bug this catches: untrusted_part keeping `enabled = true` as it keeps `enabled = false`.
    pegboard_env.user_config("[plugins.web]\nenabled = false\n")
    root = checkout(tmp_path / "repo", {"config.toml": "[plugins.web]\nenabled = true\n"})
    settings = load_settings(root)
    assert settings.plugin_enabled("web") is False
    assert any(i.what == "[plugins.web] enabled" and i.kind == "untrusted" for i in settings.ignored)
    # It may still switch one off.
    (root / ".pegboard" / "config.toml").write_text("[plugins.fs]\nenabled = false\n", encoding="utf-8")
    assert load_settings(root).plugin_enabled("fs") is False


# --- the checkout's granted.toml is held to what its config.toml is -----------


@pytest.mark.parametrize("mode", ["bypassPermissions", "unrestricted"])
def test_a_checkout_grants_file_cannot_choose_a_mode_without_prompts(pegboard_env: PegboardEnv, tmp_path: Path,
                                                                     mode: str) -> None:
    # Bug this catches: "checkout grants" left out of the checkout's layers (CHECKOUT_LAYERS).
    root = checkout(tmp_path / "repo", {"granted.toml": f'[permissions]\nmode = "{mode}"\n'})
    untrusted = load_settings(root)
    assert untrusted.core.permissions.mode == "default"
    trust(root)
    with pytest.raises(ConfigError, match="granted.toml: \\[permissions\\] mode = .*a project's config cannot "
                                          "choose a mode without prompts"):
        load_settings(root)


@pytest.mark.parametrize("trusted", [False, True])
def test_a_checkout_grants_file_cannot_unprotect_a_path(pegboard_env: PegboardEnv, tmp_path: Path,
                                                        trusted: bool) -> None:
    files = {"granted.toml": '[permissions]\nprotected_paths = ["!.git/**"]\n',
             "config.toml": '[permissions]\nprotected_paths = ["!.envrc"]\n'}
    root = checkout(tmp_path / "repo", files)
    if trusted:
        trust(root)
    patterns, problems = protected_patterns(load_settings(root))
    assert "!.envrc" not in patterns and "!.git/**" not in patterns
    assert any("config.toml: [permissions] protected_paths: '!.envrc': a project config cannot unprotect" in p
               for p in problems)
    if trusted:  # untrusted, the checkout's grants file is not read at all
        assert any("granted.toml: [permissions] protected_paths: '!.git/**': a project config cannot unprotect"
                   in p for p in problems)


# --- the project key is the real path's -----------------------------------------


def test_two_checkouts_of_the_same_name_share_no_project_grants(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    # Bugs this catches: a key from the folder's name alone, or from the path as given (not resolved).
    first = checkout(tmp_path / "a" / "proj", {})
    second = checkout(tmp_path / "b" / "proj", {})
    link = tmp_path / "link"
    link.symlink_to(first)
    assert project_key(first) != project_key(second)
    assert project_key(link) == project_key(first)
    assert project_grants_file(config_dir(), link) == project_grants_file(config_dir(), first)
    append_grant(project_grants_file(config_dir(), first), "Bash(make test)")
    assert ("allow", "Bash(make test)") in {(b, t) for b, t, _ in load_settings(first).rules()}
    assert ("allow", "Bash(make test)") in {(b, t) for b, t, _ in load_settings(link).rules()}
    assert "Bash(make test)" not in {t for _, t, _ in load_settings(second).rules()}


def test_a_pegboard_folder_in_a_sibling_whose_name_starts_with_the_roots_is_outside(pegboard_env: PegboardEnv,
                                                                                     tmp_path: Path) -> None:
    # Bug this catches: the "inside the root" test as a string prefix without the trailing "/".
    root = tmp_path / "root"
    root.mkdir()
    sibling = checkout(tmp_path / "root-x", {"config.toml": '[permissions]\nallow = ["Bash"]\n',
                                             "granted.toml": '[permissions]\nallow = ["Write"]\n'})
    (root / ".pegboard").symlink_to(sibling / ".pegboard")
    trust(root)
    settings = load_settings(root)
    assert not [t for _, t, layer in settings.rules() if layer.from_checkout]
    outside = {i.source: i for i in settings.ignored if i.kind == "outside"}
    assert set(outside) == {str(root / ".pegboard" / "config.toml"), str(root / ".pegboard" / "granted.toml")}
    assert outside[str(root / ".pegboard" / "config.toml")].detail == f"it is {sibling / '.pegboard' / 'config.toml'}"

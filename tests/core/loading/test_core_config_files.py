"""Every config path that exists but is not a regular file is a
configuration error naming it (issue 30 item 3); for the system policy
this fails closed: no call runs. A FIFO is looked at without being opened
for a blocking read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pegboard._loading.config import ConfigError, load_settings
from pegboard.testing import PegboardEnv

PEGBOARD = str(Path(sys.executable).parent / "pegboard")


def make_folder(path: Path) -> None:
    path.mkdir(parents=True)


def make_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {"folder": (make_folder, "a folder"),
                                                         "fifo": (make_fifo, "a FIFO")}


def place(env: PegboardEnv, root: Path, which: str) -> Path:
    return {"policy": env.policy_path, "user": env.config_dir / "config.toml",
            "project": root / ".pegboard" / "config.toml", "explicit": root / "chosen.toml"}[which]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("which", ["policy", "user", "project", "explicit"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_config_path_that_is_not_a_file_is_an_error_naming_it(pegboard_env: PegboardEnv, tmp_path: Path,
                                                                 which: str, kind: str) -> None:
    make, word = KINDS[kind]
    path = place(pegboard_env, tmp_path, which)
    make(path)
    with pytest.raises(ConfigError) as raised:
        load_settings(tmp_path, path if which == "explicit" else None)
    assert str(raised.value).startswith(f"{path}: {word}, not a regular file")


@pytest.mark.timeout(20)
def test_a_trusted_folders_file_that_is_a_fifo_is_an_error(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    fifo = pegboard_env.config_dir / "trusted-folders.toml"
    make_fifo(fifo)
    with pytest.raises(ConfigError, match="trusted-folders.toml: cannot read: not a regular file"):
        load_settings(tmp_path)


def pegboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PEGBOARD, "--cwd", str(cwd), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_policy_that_is_not_a_file_fails_closed(pegboard_env: PegboardEnv, tmp_path: Path, kind: str) -> None:
    make, word = KINDS[kind]
    make(pegboard_env.policy_path)
    target = tmp_path / "a.txt"
    target.write_text("secret\n", encoding="utf-8")
    read = ["Read", "--input", json.dumps({"file_path": str(target)})]
    for args in (["call", *read], ["permissions", "check", *read]):
        done = pegboard(args, tmp_path)
        assert done.returncode != 0 and "secret" not in done.stdout
        assert f"{pegboard_env.policy_path}: {word}, not a regular file" in done.stderr
    doctor = pegboard(["doctor"], tmp_path)
    assert f"{pegboard_env.policy_path}: {word}, not a regular file" in doctor.stdout

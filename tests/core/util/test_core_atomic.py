"""The one atomic-write helper (pegboard.paths.atomic_write) and that every
writer uses it."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from pegboard.paths import MultiplyLinked, NotRegular, PathChanged, atomic_write

ROOT = Path(__file__).parents[3]


def test_writes_text_or_bytes_whole_and_keeps_the_old_mode(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic_write(target, "héllo")
    assert target.read_bytes() == "héllo".encode()
    os.chmod(target, 0o640)
    st = atomic_write(target, b"again")
    assert target.read_bytes() == b"again" and stat.S_IMODE(st.st_mode) == 0o640
    assert os.listdir(tmp_path) == ["a.txt"]  # no temp file left


def test_a_secret_is_created_private(tmp_path: Path) -> None:
    st = atomic_write(tmp_path / "token.json", "{}", default_mode=0o600)
    assert stat.S_IMODE(st.st_mode) == 0o600


def test_no_symlink_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(PathChanged):
        atomic_write(tmp_path / "link" / "a.txt", "x")
    (real / "target").write_text("keep")
    (real / "name").symlink_to(real / "target")
    with pytest.raises(PathChanged):
        atomic_write(real / "name", "x")
    assert (real / "target").read_text() == "keep"


def test_refuses_other_kinds_and_extra_links(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(NotRegular):
        atomic_write(tmp_path / "dir", "x")
    (tmp_path / "one").write_text("1")
    os.link(tmp_path / "one", tmp_path / "two")
    with pytest.raises(MultiplyLinked):
        atomic_write(tmp_path / "one", "x")
    atomic_write(tmp_path / "one", "x", allow_multilinked=True)


def test_every_writer_uses_the_one_helper() -> None:
    """No temp-file-and-rename of its own anywhere in the core or the plugins."""
    pattern = re.compile(r"os\.replace\(|os\.rename\([^)]*tmp")
    offenders = [str(p.relative_to(ROOT)) for folder in ("core", "plugins") for p in (ROOT / folder).rglob("*.py")
                 if p != ROOT / "core" / "_util" / "atomic.py" and pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_open_dir_reads_a_text_path_as_pathlib_does(tmp_path: Path) -> None:
    """open_dir cuts a clean path's text at each "/"; an unclean one goes as
    pathlib reads it, and either way the folder reached is the same."""
    from pegboard.paths import open_dir

    real = tmp_path.resolve()
    (real / "a" / "b").mkdir(parents=True)
    (real / "link").symlink_to(real / "a")
    want = os.stat(real / "a" / "b")
    for given in (real / "a" / "b", str(real / "a" / "b"), f"{real}//a/./b/", f"{real}/a/b/."):
        fd = open_dir(given)
        try:
            got = os.fstat(fd)
        finally:
            os.close(fd)
        assert (got.st_dev, got.st_ino) == (want.st_dev, want.st_ino), given
    for through_link in (str(real / "link" / "b"), f"{real}//link/./b/"):
        with pytest.raises(PathChanged):
            open_dir(through_link)
    with pytest.raises(ValueError):
        open_dir("a/b")

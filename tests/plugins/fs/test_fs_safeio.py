"""Atomic writes under SIGKILL, and opens that refuse a swapped-in symlink."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pegboard.plugins.fs import _safeio

MIB = 1 << 20
OLD = b"O" * (4 * MIB)
NEW = b"N" * (3 * MIB + 12345)  # a different length, so a torn write cannot pass as either

# The child announces each step on stdout and waits for the parent's go on stdin,
# so the parent can kill it exactly between any two steps of the write.
CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from pegboard.plugins.fs import _safeio

    real_write, real_replace, real_fsync = os.write, os.replace, os.fsync

    def step(tag):
        sys.stdout.write(tag + "\\n"); sys.stdout.flush()
        sys.stdin.readline()

    def write(fd, data):
        n = real_write(fd, data)
        step("write")
        return n

    def replace(*a, **k):
        step("before-replace")
        real_replace(*a, **k)
        step("after-replace")

    def fsync(fd):
        real_fsync(fd)
        step("fsync")

    os.write, os.replace, os.fsync = write, replace, fsync
    target = Path(sys.argv[1])
    new = sys.argv[2].encode() * int(sys.argv[3]) + b"N" * int(sys.argv[4])
    if sys.argv[5] == "naive":
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
        view = memoryview(new)
        while view:
            view = view[write(fd, view[: 1 << 20]):]
    else:
        _safeio.atomic_write(target, new)
    step("done")
    """
)


def _run_and_kill(tmp_path: Path, target: Path, kill_after: int, how: str) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(target), "N", str(3 * MIB), "12345", how],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    steps = 0
    for line in proc.stdout:
        if steps == kill_after or line.strip() == "done":
            break
        steps += 1
        proc.stdin.write("\n")
        proc.stdin.flush()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()


def _whole(target: Path) -> bool:
    data = target.read_bytes()
    return data == OLD or data == NEW


@pytest.mark.slow
def test_sigkill_at_every_step_leaves_old_or_new(tmp_path: Path) -> None:
    target = tmp_path / "file.bin"
    outcomes = set()
    # the write takes 4 chunk writes, an fsync, a rename and a dir fsync: kill after each of them
    for kill_after in [*range(0, 9), *random.sample(range(0, 9), 4)]:
        target.write_bytes(OLD)
        _run_and_kill(tmp_path, target, kill_after, "atomic")
        assert _whole(target), f"torn file after kill at step {kill_after}"
        outcomes.add(target.read_bytes() == NEW)
    assert outcomes == {True, False}  # both sides of the rename were really hit


def test_the_kill_harness_catches_a_non_atomic_writer(tmp_path: Path) -> None:
    # the same harness on a plain truncate-and-write: it must see the torn file
    target = tmp_path / "file.bin"
    target.write_bytes(OLD)
    _run_and_kill(tmp_path, target, 1, "naive")
    assert not _whole(target)


@pytest.mark.slow
def test_sigkill_at_random_instants(tmp_path: Path) -> None:
    target = tmp_path / "file.bin"
    code = ("import sys; from pathlib import Path; from pegboard.plugins.fs import _safeio\n"
            "p = Path(sys.argv[1]); d = [b'O' * (4 << 20), b'N' * ((3 << 20) + 12345)]\n"
            "i = 0\nwhile True:\n    _safeio.atomic_write(p, d[i % 2]); i += 1\n")
    for _ in range(15):
        target.write_bytes(OLD)
        proc = subprocess.Popen([sys.executable, "-c", code, str(target)])
        try:
            proc.wait(timeout=random.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _whole(target)


def test_write_keeps_mode_and_creates_new(tmp_path: Path) -> None:
    target = (tmp_path / "script.sh").resolve()
    target.write_text("old")
    os.chmod(target, 0o751)
    _safeio.atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    fresh = (tmp_path / "fresh.txt").resolve()
    _safeio.atomic_write(fresh, b"hi")
    assert fresh.read_bytes() == b"hi"
    assert not [p for p in tmp_path.iterdir() if "pegboard-tmp" in p.name]


def test_open_refuses_a_component_swapped_for_a_symlink(tmp_path: Path) -> None:
    inside = tmp_path / "work" / "sub"
    inside.mkdir(parents=True)
    (inside / "f.txt").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("SECRET")
    real = (inside / "f.txt").resolve()  # what the permission check saw
    os.close(_safeio.open_read(real))
    # the swap: the checked folder becomes a symlink to the outside
    os.rename(inside, tmp_path / "work" / "old-sub")
    os.symlink(outside, inside)
    with pytest.raises(_safeio.PathChanged):
        _safeio.open_read(real)
    with pytest.raises(_safeio.PathChanged):
        _safeio.atomic_write(real, b"pwned")
    assert (outside / "f.txt").read_text() == "SECRET"


def test_final_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("SECRET")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "secret")
    with pytest.raises(_safeio.PathChanged):
        _safeio.open_read(link.absolute())
    with pytest.raises(_safeio.PathChanged):
        _safeio.atomic_write(link.absolute(), b"x")
    assert (tmp_path / "secret").read_text() == "SECRET"


def test_hard_linked_file_is_refused_unless_allowed(tmp_path: Path) -> None:
    outside = (tmp_path / "outside.txt").resolve()
    outside.write_text("keep")
    inside = (tmp_path / "inside.txt").resolve()
    os.link(outside, inside)
    with pytest.raises(_safeio.MultiplyLinked):
        _safeio.atomic_write(inside, b"changed")
    assert outside.read_text() == "keep"
    _safeio.atomic_write(inside, b"changed", allow_multilinked=True)
    # even when allowed, the rename replaces the name, never the shared inode
    assert inside.read_text() == "changed" and outside.read_text() == "keep"


def test_fifo_is_not_opened_for_reading(tmp_path: Path) -> None:
    fifo = (tmp_path / "pipe").resolve()
    os.mkfifo(fifo)
    with pytest.raises(_safeio.NotRegular):
        _safeio.open_read(fifo)  # would block forever without O_NONBLOCK


@pytest.mark.parametrize("how", ["openat2", "walk"])
def test_both_ways_of_opening_refuse_symlinks_anywhere(tmp_path: Path, how: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # open_read uses openat2(RESOLVE_NO_SYMLINKS) where the kernel has it and
    # walks the path one O_NOFOLLOW component at a time where it does not.
    if how == "walk":
        monkeypatch.setattr(_safeio, "_openat2_state", [None])
    elif _safeio._openat2_no_symlinks(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC) is None:
        pytest.skip("openat2 is not available here")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "f.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("SECRET")
    (tmp_path / "link.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "linkdir").symlink_to(tmp_path / "dir")
    root = tmp_path.resolve()
    fd = _safeio.open_read(root / "dir" / "f.txt")
    with os.fdopen(fd, "rb") as f:
        assert f.read() == b"inside"
    for path in (root / "link.txt", root / "linkdir" / "f.txt"):
        with pytest.raises(_safeio.PathChanged):
            _safeio.open_read(path)
    with pytest.raises(FileNotFoundError):
        _safeio.open_read(root / "missing.txt")
    with pytest.raises(_safeio.PathChanged):
        _safeio.open_read(root / "dir" / "f.txt" / "below")  # a file used as a folder
    os.mkfifo(root / "fifo")
    with pytest.raises(_safeio.NotRegular):
        _safeio.open_read(root / "fifo")


def test_a_read_that_would_block_clears_o_nonblock_and_reads_as_a_blocking_fd_would() -> None:
    """Read keeps a small file's fd non-blocking (no two fcntl calls); a file
    system that honours O_NONBLOCK must still give the data, as from a
    blocking fd: a pipe with nothing in it yet stands in for one."""
    import threading

    from pegboard.plugins.fs._safeio import read_nonblocking

    rfd, wfd = os.pipe()
    try:
        os.set_blocking(rfd, False)
        timer = threading.Timer(0.2, os.write, (wfd, b"late data"))
        timer.start()
        assert read_nonblocking(rfd, 100) == b"late data"
        assert os.get_blocking(rfd)
        timer.join()
    finally:
        os.close(rfd)
        os.close(wfd)


def test_open_read_stat_keeps_o_nonblocking_only_when_asked(tmp_path: Path) -> None:
    from pegboard.plugins.fs._safeio import open_read_stat

    path = tmp_path / "f.txt"
    path.write_text("x")
    for keep in (False, True):
        fd, _ = open_read_stat(str(path.resolve()), keep_nonblocking=keep)
        try:
            assert os.get_blocking(fd) is not keep
        finally:
            os.close(fd)

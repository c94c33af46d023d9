"""The sandbox backends, each proven by a write, a remount and a connection that fail."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.plugins.shell._runner import base_env, bash_argv
from pegboard.plugins.shell._sandbox import Box, bwrap_works, landlock_abi, wrap

needs_bwrap = pytest.mark.skipif(bwrap_works() is not None, reason=f"bubblewrap unusable: {bwrap_works()}")
needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="Landlock not available")


def run_in(backend: str, box: Box, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv, fds = wrap(backend, box, bash_argv(command, 2))  # fd 2: the cwd report goes to stderr, ignored
    try:
        return subprocess.run(argv, cwd=cwd, env=base_env([cwd], tmp=box.tmp), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60, pass_fds=fds)
    finally:
        for fd in fds:
            os.close(fd)


# A probe that expects a refusal first proves the box ran: a box that fails to
# start also "refuses" everything, and such a test would pass with no box at all.
RAN = "echo box-ran $$ $(grep -c 'NoNewPrivs:.1' /proc/self/status); "


def assert_ran(r: subprocess.CompletedProcess[str], backend: str) -> None:
    """The command got as far as its first line inside the box."""
    first = r.stdout.split("\n", 1)[0].split()
    assert first[:1] == ["box-ran"], (r.stdout, r.stderr)
    if backend == "bubblewrap":
        assert int(first[1]) < 10, first  # bash is (almost) the first process of its own PID namespace
    else:
        assert first[2] == "1", first  # the Landlock launcher set no_new_privs before exec'ing bash


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    work = (tmp_path / "work").resolve()
    (work / ".git").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    return work, outside


@contextlib.contextmanager
def _answering(srv: socket.socket, reply: bytes) -> Iterator[None]:
    """Answer every connection to the listening ``srv`` with ``reply`` until the block ends."""
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.sendall(reply)
                conn.close()
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        srv.close()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback; connecting proves network reach."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    with _answering(srv, b"hello\n"):
        yield port


CONNECT = "exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3"


def test_unconfined_control_can_do_everything(layout: tuple[Path, Path], listener: int) -> None:
    # The same probes without a sandbox succeed: the tests below can fail.
    work, outside = layout
    r = run_in("none", Box((), (), True), f"touch {outside}/x && touch {work}/.git/x && {CONNECT.format(port=listener)}",
               work)
    assert r.returncode == 0 and "hello" in r.stdout
    assert (outside / "x").exists()


@needs_bwrap
def test_bwrap_writes_only_inside_the_workspace(layout: tuple[Path, Path]) -> None:
    work, outside = layout
    box = Box((work,), (work / ".git",), network=False)
    r = run_in("bubblewrap", box, f"touch {work}/ok; touch {outside}/bad; touch {work}/.git/hook; echo done", work)
    assert "done" in r.stdout
    assert (work / "ok").exists()
    assert not (outside / "bad").exists()
    assert not (work / ".git" / "hook").exists()
    assert "Read-only file system" in r.stderr


@needs_bwrap
def test_bwrap_read_level_writes_nothing(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    r = run_in("bubblewrap", Box((), (), network=False), RAN + f"touch {work}/nope", work)
    assert_ran(r, "bubblewrap")
    assert r.returncode != 0 and not (work / "nope").exists()


@needs_bwrap
def test_bwrap_remount_read_write_fails(layout: tuple[Path, Path]) -> None:
    work, outside = layout
    box = Box((work,), (work / ".git",), network=False)
    r = run_in("bubblewrap", box,
               f"mount -o remount,rw,bind {work}/.git; mount -o remount,rw /; "
               f"touch {work}/.git/x {outside}/y; grep CapEff /proc/self/status", work)
    assert not (work / ".git" / "x").exists()
    assert not (outside / "y").exists()
    assert "CapEff:\t0000000000000000" in r.stdout


@needs_bwrap
def test_bwrap_has_no_network(layout: tuple[Path, Path], listener: int) -> None:
    work, _ = layout
    r = run_in("bubblewrap", Box((work,), (), network=False), RAN + CONNECT.format(port=listener), work)
    assert_ran(r, "bubblewrap")
    assert r.returncode != 0 and "hello" not in r.stdout


@needs_bwrap
def test_bwrap_network_when_allowed(layout: tuple[Path, Path], listener: int) -> None:
    work, _ = layout
    r = run_in("bubblewrap", Box((work,), (), network=True), CONNECT.format(port=listener), work)
    assert "hello" in r.stdout


@needs_bwrap
def test_bwrap_private_tmp_and_pid_namespace(layout: tuple[Path, Path], tmp_path: Path) -> None:
    work, outside = layout
    (outside / "host-file").write_text("x")
    r = run_in("bubblewrap", Box((work,), (), network=False),
               f"test -e {outside}/host-file && echo visible || echo hidden; echo $$", work)
    seen, pid = r.stdout.split()
    assert seen == "hidden"  # /tmp is private: only the bound workspace shows through
    assert int(pid) < 10  # bash is (almost) the first process of its own PID namespace


@needs_landlock
def test_landlock_writes_only_inside(layout: tuple[Path, Path], tmp_path: Path) -> None:
    work, outside = layout
    tmp = tmp_path / "private-tmp"
    tmp.mkdir()
    r = run_in("landlock", Box((work,), (), network=False, tmp=tmp),
               f"touch {work}/ok && touch $TMPDIR/t && echo inside; touch {outside}/bad || echo refused", work)
    assert "inside" in r.stdout and "refused" in r.stdout, r.stderr
    assert (work / "ok").exists() and (tmp / "t").exists()
    assert not (outside / "bad").exists()


@needs_landlock
def test_landlock_cannot_be_lifted_from_inside(layout: tuple[Path, Path]) -> None:
    work, outside = layout
    # A nested launcher only adds restrictions: granting the outside dir again does nothing.
    from pegboard.plugins.shell import _sandbox

    inner = " ".join(wrap("landlock", Box((outside,), (), network=True), ["touch", f"{outside}/bad"])[0])
    r = run_in("landlock", Box((work,), (), network=False), RAN + f"{inner}; mount -o remount,rw /; true", work)
    assert_ran(r, "landlock")
    assert not (outside / "bad").exists(), r.stderr
    assert _sandbox.landlock_abi() >= 1


@pytest.mark.skipif(landlock_abi() < 4, reason="Landlock ABI < 4 has no TCP rules")
def test_landlock_blocks_tcp(layout: tuple[Path, Path], listener: int) -> None:
    work, _ = layout
    r = run_in("landlock", Box((work,), (), network=False), RAN + CONNECT.format(port=listener), work)
    assert_ran(r, "landlock")
    assert r.returncode != 0 and "hello" not in r.stdout


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[Path]:
    """A unix socket server on the host, like /run/docker.sock or an agent."""
    path = tmp_path / "outside" / "agent.sock"
    path.parent.mkdir(exist_ok=True)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(8)
    with _answering(srv, b"agent says hi\n"):
        yield path


UNIX_CONNECT = ("python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                "print(s.recv(100).decode())' {path}")


@pytest.mark.parametrize("backend", ["none", "bubblewrap", "landlock"])
def test_unix_sockets_outside_are_unreachable(layout: tuple[Path, Path], unix_server: Path, backend: str) -> None:
    if backend == "bubblewrap" and bwrap_works() is not None:
        pytest.skip("bubblewrap unusable")
    if backend == "landlock" and landlock_abi() < 1:
        pytest.skip("Landlock not available")
    work, _ = layout
    # The socket's folder is even bound into the box, read-only: that alone does not stop connect().
    box = Box((work,), (unix_server.parent,), network=False)
    r = run_in(backend, box, UNIX_CONNECT.format(path=unix_server), work)
    if backend == "none":
        assert "agent says hi" in r.stdout  # the control: the server is there
    else:
        assert "agent says hi" not in r.stdout
        assert "PermissionError" in r.stderr


@needs_bwrap
def test_a_writable_root_keeps_the_boxs_own_dev_and_proc(layout: tuple[Path, Path]) -> None:
    """additional_directories = ["/"] (a person's choice) binds the host's / writable over the box:
    its /dev came with it, whose nodes the box cannot open (every `> /dev/null` failed), and its
    /proc/sys. The box's own /dev and /proc go back on top."""
    work, _ = layout
    r = run_in("bubblewrap", Box((Path("/"), work), (), network=False),
               RAN + "echo quiet > /dev/null && echo devnull-ok; head -c 4 /dev/urandom | wc -c; "
                     "echo 1 > /proc/sys/kernel/ns_last_pid 2>/dev/null || echo sys-read-only", work)
    assert_ran(r, "bubblewrap")
    assert "devnull-ok" in r.stdout and "4" in r.stdout.split() and "sys-read-only" in r.stdout, (r.stdout, r.stderr)


@needs_bwrap
def test_socketpair_still_works_in_the_box(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    r = run_in("bubblewrap", Box((work,), (), network=False),
               "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())'",
               work)
    assert r.stdout.strip() == "ok", r.stderr


SYSCTL = "v=$(cat /proc/sys/vm/swappiness) && echo \"$v\" > /proc/sys/vm/swappiness && echo WROTE"


@needs_bwrap
def test_bwrap_sysctls_are_read_only(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    if os.geteuid() == 0:
        # The control: as root, outside the box, writing the same value back works.
        assert "WROTE" in run_in("none", Box((), (), True), SYSCTL, work).stdout
    r = run_in("bubblewrap", Box((work,), (), network=False), SYSCTL + "; cat /proc/sys/kernel/hostname", work)
    assert "WROTE" not in r.stdout and "Read-only file system" in r.stderr


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock not available")
def test_landlock_box_has_no_capabilities_and_cannot_signal_out(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    victim = subprocess.Popen(["sleep", "60"])
    try:
        r = run_in("landlock", Box((work,), (), network=False),
                   f"grep -E 'Cap(Eff|Bnd)' /proc/self/status; kill -0 {victim.pid} && echo SIGNALLED", work)
        assert "CapEff:\t0000000000000000" in r.stdout and "CapBnd:\t0000000000000000" in r.stdout
        if landlock_abi() >= 6:
            assert "SIGNALLED" not in r.stdout
        # The control: the same probe unconfined reaches it.
        assert "SIGNALLED" in run_in("none", Box((), (), True), f"kill -0 {victim.pid} && echo SIGNALLED", work).stdout
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.parametrize("preference", ["auto", "bubblewrap", "landlock", "off"])
def test_can_confine_answers_as_backend_for(preference: str) -> None:
    from pegboard.plugins.shell._sandbox import backend_for, can_confine

    assert can_confine(preference) is (backend_for(preference) != "none")


@needs_landlock
def test_registering_bash_runs_no_trial_sandbox_where_landlock_answers(tmp_path: Path) -> None:
    """Bash's level is known from Landlock by one system call: a start-up that
    registers the shell's tools must not spawn bubblewrap's trial sandbox."""
    code = ("import sys\nfrom pegboard import Toolbox\nfrom pegboard.plugins.shell import _sandbox\n"
            f"toolbox = Toolbox.load(cwd={str(tmp_path)!r}, plugins=['shell'])\n"
            "print(toolbox.tools['Bash'].permission, _sandbox.bwrap_works.cache_info().misses)\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "XDG_CACHE_HOME": str(tmp_path / "k"), "PEGBOARD_POLICY": str(tmp_path / "none.toml")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["read", "0"]

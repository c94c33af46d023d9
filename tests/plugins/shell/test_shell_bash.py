"""Bash, Monitor and TaskStop through the real pipeline: real bash, real files."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox, hookimpl
from pegboard._api.decisions import Answer

pytestmark = pytest.mark.anyio



class Host:
    """Says yes to every ask and records events and shown files."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.shown: list[Path] = []
        self.asked: list[str] = []

    @hookimpl
    def pegboard_ask(self, request: Any, decision: Any) -> Answer:
        self.asked.append(str(request.input.get("command")))
        return Answer(allow=True)

    @hookimpl
    def pegboard_event(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, dict(data)))

    @hookimpl
    def pegboard_file_read(self, path: Path, source: str) -> None:
        self.shown.append(Path(path))


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    return root


def _config(tmp_path: Path, body: str) -> Path:
    cfg = tmp_path / "shell.toml"
    cfg.write_text(f"[plugins.shell]\n{body}\n")
    return cfg


@pytest.fixture(params=["off", "auto"])
def sandbox(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def env(proj: Path, tmp_path: Path, sandbox: str) -> AsyncIterator[tuple[Any, Host]]:
    host = Host()
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=host, config=_config(tmp_path, f'sandbox = "{sandbox}"'))
    s = tb.session(mode="default")
    yield s, host
    await s.aclose()


async def bash(s: Any, command: str, **kw: Any) -> Any:
    return await s.call("Bash", {"command": command, **kw})


async def test_output_interleaves_stdout_and_stderr_and_reports_status(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await bash(s, "echo one; echo two >&2; echo three; exit 4")
    assert r.is_error
    assert r.text_content().startswith("one\ntwo\nthree")
    assert "Exit code: 4" in r.text_content()
    assert r.structured_content["exit_code"] == 4


async def test_cd_persists_but_environment_does_not(env: tuple[Any, Host], proj: Path) -> None:
    s, _ = env
    (proj / "sub" / "deeper").mkdir(parents=True)
    assert not (await bash(s, "cd sub/deeper && export LEFT_OVER=yes")).is_error
    r = await bash(s, 'pwd; echo "[${LEFT_OVER:-unset}]"')
    assert r.text_content().splitlines() == [str(proj / "sub" / "deeper"), "[unset]"]


async def test_cd_outside_the_working_dirs_resets_to_root(env: tuple[Any, Host], proj: Path) -> None:
    s, _ = env
    r = await bash(s, "cd / && true")
    assert "reset" in r.text_content()
    assert (await bash(s, "pwd")).text_content().strip() == str(proj)


async def test_stdin_is_empty(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await bash(s, "cat; read -r x || echo eof", timeout=20_000)
    assert r.text_content().strip() == "eof"


@pytest.mark.slow
async def test_timeout_kills_the_process_group(env: tuple[Any, Host], proj: Path) -> None:
    s, _ = env
    marker = proj / "late"
    # The child outlives its parent's wait only if the group is not killed.
    r = await bash(s, f"(sleep 3; touch {marker}) & sleep 30", timeout=300)
    assert r.is_error and "timed out" in r.text_content() and "process group" in r.text_content()
    assert r.structured_content["timed_out"] is True
    # Prove the orphan died: a later run waits longer than the orphan would have slept.
    await bash(s, "sleep 4", timeout=20_000)
    assert not marker.exists()


async def test_long_output_is_spilled_to_a_file(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await bash(s, "seq 1 20000")
    text = r.text_content()
    path = Path(r.structured_content["output_file"])
    assert str(path) in text and len(text) < 30_000
    assert path.read_text().splitlines() == [str(i) for i in range(1, 20001)]
    assert text.startswith("1\n2\n3\n") and text.rstrip().endswith("20000")


async def test_environment_that_runs_code_is_not_passed(env: tuple[Any, Host], proj: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    s, _ = env
    marker = proj / "bash_env_ran"
    script = proj / "evil.sh"
    script.write_text(f"touch {marker}\n")
    for name, value in {"BASH_ENV": str(script), "ENV": str(script), "LESSOPEN": f"|{script} %s",
                        "RIPGREP_CONFIG_PATH": str(script), "GIT_DIR": "/nonexistent",
                        "LD_PRELOAD": "/nonexistent.so", "SECRET_TOKEN": "s3cret"}.items():
        monkeypatch.setenv(name, value)
    r = await bash(s, "env")
    names = {line.split("=", 1)[0] for line in r.text_content().splitlines()}
    for bad in ("BASH_ENV", "ENV", "LESSOPEN", "RIPGREP_CONFIG_PATH", "GIT_DIR", "LD_PRELOAD", "SECRET_TOKEN"):
        assert bad not in names
    assert "PATH" in names and "HOME" in names
    assert not marker.exists()


async def test_path_entries_inside_the_working_dirs_are_dropped(env: tuple[Any, Host], proj: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    s, _ = env
    fake = proj / "bin"
    fake.mkdir()
    (fake / "ls").write_text("#!/bin/sh\necho HIJACKED\n")
    (fake / "ls").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:.:{os.environ['PATH']}")
    r = await bash(s, "ls")
    assert "HIJACKED" not in r.text_content()
    assert "bin" in r.text_content()


async def test_files_shown_in_full_count_as_read(env: tuple[Any, Host], proj: Path) -> None:
    s, host = env
    (proj / "short.txt").write_text("a\nb\n")
    (proj / "long.txt").write_text("".join(f"{i}\n" for i in range(50)))
    await bash(s, "cat short.txt")
    await bash(s, "head -n 5 long.txt")
    await bash(s, "cat long.txt | head -n 3")
    assert host.shown == [proj / "short.txt"]
    await bash(s, "sed -n '1,100p' long.txt")
    assert host.shown[-1] == proj / "long.txt"


async def test_background_job_writes_a_file_and_reports_completion(env: tuple[Any, Host]) -> None:
    s, host = env
    r = await bash(s, "echo started; echo finished", run_in_background=True, description="two lines")
    task_id = r.structured_content["task_id"]
    out = Path(r.structured_content["output_file"])
    record = await s.tasks.wait(task_id, timeout=30)
    assert record is not None and record.status == "done"
    assert out.read_text() == "started\nfinished\n"
    done = [d for k, d in host.events if k == "background.done" and d["id"] == task_id]
    assert done and done[0]["result"]["exit_code"] == 0


@pytest.mark.slow
async def test_task_stop_kills_a_background_job(env: tuple[Any, Host], proj: Path) -> None:
    s, _ = env
    marker = proj / "should_not_exist"
    r = await bash(s, f"sleep 3; touch {marker}", run_in_background=True)
    task_id = r.structured_content["task_id"]
    stop = await s.call("TaskStop", {"shell_id": task_id})
    assert not stop.is_error, stop.text_content()
    assert s.tasks.get(task_id).status == "stopped"
    again = await s.call("TaskStop", {"task_id": task_id})
    assert again.is_error and "already stopped" in again.text_content()
    await bash(s, "sleep 4", timeout=20_000)
    assert not marker.exists()


async def test_task_stop_unknown_id_lists_running_tasks(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await s.call("TaskStop", {"task_id": "task-nope"})
    assert r.is_error and "no such task" in r.text_content()


async def test_monitor_turns_lines_into_events(env: tuple[Any, Host]) -> None:
    s, host = env
    r = await s.call("Monitor", {"command": "for i in 1 2 3; do echo line$i; done; echo oops >&2",
                                 "description": "count"})
    assert not r.is_error, r.text_content()
    task_id = r.structured_content["task_id"]
    record = await s.tasks.wait(task_id, timeout=30)
    assert record is not None and record.status == "done"
    lines = [d for k, d in host.events if k == "monitor.line"]
    assert [d["line"] for d in lines] == ["line1", "line2", "line3"]
    assert all(d["description"] == "count" and d["task_id"] == task_id for d in lines)
    assert record.result["exit_code"] == 0


@pytest.mark.slow
async def test_monitor_timeout_ends_the_watch(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await s.call("Monitor", {"command": "echo up; sleep 30", "description": "srv", "timeout_ms": 500})
    record = await s.tasks.wait(r.structured_content["task_id"], timeout=30)
    assert record is not None and record.result["timed_out"] is True


async def test_bash_input_limits(env: tuple[Any, Host]) -> None:
    s, _ = env
    r = await s.call("Bash", {"command": "true", "timeout": 600_001})
    assert r.is_error


async def test_sandboxed_command_cannot_create_project_config(proj: Path, tmp_path: Path) -> None:
    from pegboard.plugins.shell._sandbox import backend_for

    if backend_for("auto") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=Host())
    s = tb.session(mode="default")
    try:
        r = await bash(s, "mkdir -p .pegboard; echo 'allow = [\"Bash\"]' > .pegboard/config.toml; "
                          "touch .git-not-protected; echo done")
        assert "done" in r.text_content()
        assert not (proj / ".pegboard" / "config.toml").exists()
        assert (proj / ".git-not-protected").exists()  # the rest of the workspace is writable
    finally:
        await s.aclose()


async def test_a_process_that_leaves_the_group_does_not_hang_the_call(env: tuple[Any, Host]) -> None:
    s, _ = env
    # setsid puts sleep in its own session, out of reach of the group kill;
    # it still holds the output pipe. The call must come back anyway.
    r = await bash(s, "echo before; setsid sleep 60 & echo after", timeout=20_000)
    assert r.text_content().startswith("before\nafter")


@pytest.mark.slow
async def test_closing_the_session_kills_background_jobs(proj: Path, tmp_path: Path, sandbox: str) -> None:
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=Host(), config=_config(tmp_path, f'sandbox = "{sandbox}"'))
    s = tb.session(mode="default")
    marker, started = proj / "survived", proj / "started"
    r = await bash(s, f"touch {started}; sleep 3; touch {marker}", run_in_background=True)
    assert not r.is_error
    for _ in range(100):  # the job really runs (in the box, when there is one) before the session closes
        if started.exists():
            break
        await asyncio.sleep(0.1)
    assert started.exists(), r.text_content()
    await s.aclose()
    s2 = tb.session(mode="default")
    try:
        await bash(s2, "sleep 4", timeout=20_000)
    finally:
        await s2.aclose()
    assert not marker.exists()


async def test_sandbox_tmp_lasts_the_session_and_is_not_the_hosts(proj: Path, tmp_path: Path) -> None:
    from pegboard.plugins.shell._sandbox import backend_for

    if backend_for("auto") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    host_file = Path("/tmp") / f"pegboard-host-{proj.parent.name}"
    host_file.write_text("host")
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=Host())
    s = tb.session(mode="default")
    try:
        await bash(s, "echo kept > /tmp/scratch.txt")
        assert (await bash(s, "cat /tmp/scratch.txt")).text_content().strip() == "kept"
        r = await bash(s, f"test -e {host_file} && echo visible || echo hidden")
        assert r.text_content().strip() == "hidden"
        assert not Path("/tmp/scratch.txt").exists()
    finally:
        host_file.unlink()
        await s.aclose()


async def test_sandboxed_caches_go_to_the_boxs_own_tmp(proj: Path, tmp_path: Path) -> None:
    """HOME is read-only in the box: pip, uv and npm caches still work."""
    from pegboard.plugins.shell._sandbox import backend_for

    if backend_for("auto") == "none":
        pytest.skip("needs a sandbox")
    tb = Toolbox.load(cwd=proj, plugins=["shell"], host=Host(), config=_config(tmp_path, 'sandbox = "auto"'))
    s = tb.session(mode="acceptEdits")
    try:
        r = await bash(s, 'mkdir -p "$XDG_CACHE_HOME/pip" "$npm_config_cache" && echo cached > "$XDG_CACHE_HOME/pip/x" '
                          '&& cat "$XDG_CACHE_HOME/pip/x" && touch "$HOME/.pegboard-probe" 2>/dev/null || echo home-ro')
        assert not r.is_error, r.text_content()
        assert r.text_content().split() == ["cached", "home-ro"]
        again = await bash(s, 'cat "$XDG_CACHE_HOME/pip/x"')  # lasts the session
        assert again.text_content().strip() == "cached"
    finally:
        await s.aclose()
    unboxed = Toolbox.load(cwd=proj, plugins=["shell"], host=Host(), config=_config(tmp_path, 'sandbox = "off"'))
    s = unboxed.session(mode="acceptEdits")
    try:
        # unconfined, HOME is writable and the caches are left where the tools put them
        assert (await bash(s, 'echo "[${XDG_CACHE_HOME-unset}]"')).text_content().strip() == "[unset]"
    finally:
        await s.aclose()


async def test_the_sandbox_hides_and_guards_what_file_deny_rules_name(proj: Path, tmp_path: Path) -> None:
    """A command the vote cannot read word by word runs unasked in the box,
    so the box itself keeps the files deny rules name: empty to read, and
    not to be changed."""
    from pegboard.plugins.shell._sandbox import backend_for

    if backend_for("bubblewrap") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    (proj / ".env").write_text("SECRET=hunter2\n")
    (proj / "secrets").mkdir()
    (proj / "secrets" / "k.txt").write_text("SECRET=key\n")
    (proj / "locked.txt").write_text("keep\n")
    cfg = _config(tmp_path, 'sandbox = "bubblewrap"\n\n[permissions]\n'
                            'deny = ["Read(./.env)", "Read(secrets/**)", "Edit(./locked.txt)"]')
    host = Host()
    tb = Toolbox.load(cwd=proj, plugins=["shell", "fs"], host=host, config=cfg)
    s = tb.session(mode="acceptEdits")
    try:
        script = ("import pathlib\n"
                  "def read(name):\n"
                  "    try:\n"
                  "        return repr(pathlib.Path(name).read_text())\n"
                  "    except OSError as exc:\n"
                  "        return type(exc).__name__\n"
                  "def write(name):\n"
                  "    try:\n"
                  "        pathlib.Path(name).write_text('changed')\n"
                  "        return 'written'\n"
                  "    except OSError as exc:\n"
                  "        return type(exc).__name__\n"
                  "print(read('.env'), sorted(x.name for x in pathlib.Path('secrets').iterdir()), write('locked.txt'))")
        (proj / "probe.py").write_text(script)
        r = await bash(s, "python3 probe.py; grep -rs SECRET . ; echo done")
        out = r.text_content()
        assert host.asked == [], host.asked  # ran unasked: the box enforces the rules
        first = out.splitlines()[0]
        # .env reads as nothing or not at all, secrets/ is an empty folder, locked.txt stays as it is
        assert first.split(" ", 1)[0] in ("''", "PermissionError"), out
        assert "[]" in first and "written" not in first and "done" in out, out
        assert "hunter2" not in out and "SECRET=key" not in out, out
        assert (proj / "locked.txt").read_text() == "keep\n"
        assert (proj / ".env").read_text() == "SECRET=hunter2\n"  # hidden in the box, untouched outside
    finally:
        await s.aclose()

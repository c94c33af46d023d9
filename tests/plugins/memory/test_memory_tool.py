"""The memory plugin's tool: each command on SQLite and the real PostgreSQL,
results worded as Anthropic's memory tool words them, refusals that change
nothing, paths confined to /memories, sizes bounded, sets per person and per
project, permissions by mode, and writes in the audit log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pegboard import Session, Toolbox
from pegboard.plugins.memory import session_person, use_person
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio


def load(root: Path, host: ScriptedHost | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["memory"], host=host)


async def run(session: Session, **args: Any) -> tuple[bool, str]:
    result = await session.call("memory", args)
    return result.is_error, result.text_content()


async def ok(session: Session, **args: Any) -> str:
    failed, text = await run(session, **args)
    assert not failed, text
    return text


async def refused(session: Session, **args: Any) -> str:
    failed, text = await run(session, **args)
    assert failed, text
    return text


@pytest.mark.slow
async def test_each_command_on_each_store(tmp_path: Path, store_url: str) -> None:
    session = load(tmp_path).session("default")
    assert await ok(session, command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories")
    assert await ok(session, command="create", path="/memories/notes/style.md",
                    file_text="tabs\nshort names\nno emoji\n") == (
        "File created successfully at: /memories/notes/style.md")
    await ok(session, command="create", path="/memories/people/ada.md", file_text="Ada likes tea.\n")
    await ok(session, command="create", path="/memories/.hidden/x.md", file_text="not listed")
    await ok(session, command="create", path="/memories/deep/a/b/c.md", file_text="three down")
    assert (await ok(session, command="view", path="/memories/")).splitlines() == [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
        "61B\t/memories",  # the hidden file counts, unlisted
        "10B\t/memories/deep/", "10B\t/memories/deep/a/",
        "26B\t/memories/notes/", "26B\t/memories/notes/style.md",
        "15B\t/memories/people/", "15B\t/memories/people/ada.md"]
    assert await ok(session, command="view", path="/memories/notes/style.md") == (
        "Here's the content of /memories/notes/style.md with line numbers:\n"
        "     1\ttabs\n     2\tshort names\n     3\tno emoji")
    assert (await ok(session, command="view", path="/memories/notes/style.md", view_range=[2, -1])).endswith(
        "     2\tshort names\n     3\tno emoji")
    assert (await ok(session, command="view", path="/memories/notes/style.md", view_range=[1, 1])).endswith(
        "     1\ttabs")
    assert await ok(session, command="str_replace", path="/memories/notes/style.md", old_str="short names",
                    new_str="long, clear names") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\ttabs\n     2\tlong, clear names\n     3\tno emoji")
    assert await ok(session, command="insert", path="/memories/notes/style.md", insert_line=0,
                    insert_text="# Style\n") == "The file /memories/notes/style.md has been edited."
    await ok(session, command="insert", path="/memories/notes/style.md", insert_line=4, insert_text="last")
    assert (await ok(session, command="view", path="/memories/notes/style.md")).splitlines()[1:] == [
        "     1\t# Style", "     2\ttabs", "     3\tlong, clear names", "     4\tno emoji", "     5\tlast"]
    assert await ok(session, command="rename", old_path="/memories/people/ada.md",
                    new_path="/memories/people/ada-lovelace.md") == (
        "Successfully renamed /memories/people/ada.md to /memories/people/ada-lovelace.md")
    assert await ok(session, command="rename", old_path="/memories/people",
                    new_path="/memories/archive/people") == (
        "Successfully renamed /memories/people to /memories/archive/people")
    assert "Ada likes tea." in await ok(session, command="view", path="/memories/archive/people/ada-lovelace.md")
    assert await ok(session, command="delete", path="/memories/archive") == "Successfully deleted /memories/archive"
    assert await ok(session, command="delete", path="/memories/deep/a/b/c.md") == (
        "Successfully deleted /memories/deep/a/b/c.md")
    assert (await ok(session, command="view", path="/memories")).splitlines()[1:] == [
        "55B\t/memories", "45B\t/memories/notes/", "45B\t/memories/notes/style.md"]
    # Another toolbox, another session (another conversation): the memories are there.
    later = load(tmp_path).session("default")
    assert "     4\tno emoji" in await ok(later, command="view", path="/memories/notes/style.md")


@pytest.mark.slow
async def test_refusals_say_why_and_change_nothing(tmp_path: Path, store_url: str) -> None:
    session = load(tmp_path).session("default")
    await ok(session, command="create", path="/memories/a.md", file_text="one\ntwo\none\n")
    await ok(session, command="create", path="/memories/dir/b.md", file_text="b")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"command": "create", "path": "/memories/a.md", "file_text": "x"}, "File /memories/a.md already exists"),
        ({"command": "create", "path": "/memories/dir", "file_text": "x"}, "The path /memories/dir is a directory"),
        ({"command": "create", "path": "/memories", "file_text": "x"}, "is the memory directory itself"),
        ({"command": "create", "path": "/memories/a.md/c.md", "file_text": "x"},
         "The path /memories/a.md is a file, so nothing can be made below it"),
        ({"command": "view", "path": "/memories/nope.md"},
         "The path /memories/nope.md does not exist. Please provide a valid path."),
        ({"command": "view", "path": "/memories/dir", "view_range": [1, 2]}, "`view_range` parameter is not allowed"),
        ({"command": "view", "path": "/memories/a.md", "view_range": [9, 10]},
         "Invalid `view_range` parameter: [9, 10]. Its first element `9` should be within the range of lines of "
         "the file: [1, 3]."),
        ({"command": "view", "path": "/memories/a.md", "view_range": [3, 2]}, "Its second element `2`"),
        ({"command": "str_replace", "path": "/memories/a.md", "old_str": "three", "new_str": "x"},
         "No replacement was performed, old_str `three` did not appear verbatim in /memories/a.md."),
        ({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "x"},
         "No replacement was performed. Multiple occurrences of old_str `one` in lines: 1, 3. Please ensure it is "
         "unique"),
        ({"command": "str_replace", "path": "/memories/a.md", "old_str": "", "new_str": "x"}, "`old_str` is empty"),
        ({"command": "str_replace", "path": "/memories/dir", "old_str": "a", "new_str": "x"},
         "The path /memories/dir is not a file."),
        ({"command": "str_replace", "path": "/memories/no.md", "old_str": "a", "new_str": "x"},
         "The path /memories/no.md does not exist. Please provide a valid path."),
        ({"command": "insert", "path": "/memories/a.md", "insert_line": 4, "insert_text": "x"},
         "Invalid `insert_line` parameter: 4. It should be within the range [0, 3]."),
        ({"command": "insert", "path": "/memories/a.md", "insert_line": -1, "insert_text": "x"},
         "Invalid `insert_line` parameter: -1."),
        ({"command": "delete", "path": "/memories"}, "Cannot delete the /memories directory itself"),
        ({"command": "delete", "path": "/memories/gone"}, "The path /memories/gone does not exist"),
        ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/dir/b.md"},
         "The destination /memories/dir/b.md already exists"),
        ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/dir"},
         "The destination /memories/dir already exists"),
        ({"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/dir/inner"},
         "Cannot move /memories/dir into itself"),
        ({"command": "rename", "old_path": "/memories/dir", "new_path": "/memories/a.md/x"},
         "The path /memories/a.md is a file"),
        ({"command": "rename", "old_path": "/memories/none", "new_path": "/memories/x"},
         "The path /memories/none does not exist"),
        ({"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}, "Cannot rename the /memories"),
        ({"command": "create", "path": "/memories/x.md"},
         "The create command was not run: it needs file_text. It takes: path, file_text."),
        ({"command": "view", "path": "/memories", "file_text": "x"},
         "file_text is not one of its parameters. It takes: path, view_range (optional)."),
        ({"command": "rename", "path": "/memories/a.md"}, "it needs old_path, new_path; path is not one of its"),
    ]
    for args, said in cases:
        text = await refused(session, **args)
        assert said in text, (args, text)
    assert (await ok(session, command="view", path="/memories/a.md")).splitlines()[1:] == [
        "     1\tone", "     2\ttwo", "     3\tone"]
    listing = (await ok(session, command="view", path="/memories")).splitlines()
    assert listing[2:] == ["12B\t/memories/a.md", "1B\t/memories/dir/", "1B\t/memories/dir/b.md"]


BAD_PATHS = [
    "/memories/../etc/passwd", "/memories/a/../../etc", "/memories/..", "../memories/x", "/memories/./a",
    "/etc/passwd", "/", "/memoriesX/a", "/memories-old/a", "memories/x", "notes.md", "",
    "/memories/%2e%2e/x", "/memories/%2E%2E%2Fetc", "/memories/a%2fb", "/memories/a\\..\\b", "/memories\\a",
    "/memories/a\x00b", "/memories/\x1b[31m", "/memories/a\u202eb", "/memories//a", "/memories/\uff0e\uff0e/x",
    "/memories/" + "x" * 256, "/memories/" + "/".join("d" * 17),
]


@pytest.mark.parametrize("path", BAD_PATHS, ids=[repr(p)[:40] for p in BAD_PATHS])
async def test_paths_outside_memories_are_refused_and_nothing_is_written(tmp_path: Path, path: str) -> None:
    session = load(tmp_path).session("default")
    for args in ({"command": "view", "path": path}, {"command": "create", "path": path, "file_text": "x"},
                 {"command": "str_replace", "path": path, "old_str": "a", "new_str": "b"},
                 {"command": "insert", "path": path, "insert_line": 0, "insert_text": "x"},
                 {"command": "delete", "path": path},
                 {"command": "rename", "old_path": path, "new_path": "/memories/ok"},
                 {"command": "rename", "old_path": "/memories/ok", "new_path": path}):
        text = await refused(session, **args)
        assert "is refused" in text or "A memory path is needed" in text, (args, text)
        assert "Memory paths are /memories or /memories/<name>/..." in text
    assert (await ok(session, command="view", path="/memories")).endswith("0B\t/memories")


async def test_names_that_look_odd_but_stay_inside_are_kept_as_written(tmp_path: Path) -> None:
    session = load(tmp_path).session("default")
    for path in ("/memories/50%.md", "/memories/a..b", "/memories/..hidden", "/memories/caf\u00e9.md",
                 "/memories/trailing/"):
        await ok(session, command="create", path=path if not path.endswith("/") else path + "x.md", file_text="x")
    # NFC: the decomposed spelling is the same file
    assert "x" in await ok(session, command="view", path="/memories/cafe\u0301.md")


async def test_sizes_are_bounded_and_a_write_past_them_changes_nothing(tmp_path: Path, store_url: str,
                                                                         user_config: Callable[[str], Path]) -> None:
    user_config("[plugins.memory]\nmax_file_bytes = 10\nmax_total_bytes = 25\nmax_files = 3\n")
    session = load(tmp_path).session("default")
    text = await refused(session, command="create", path="/memories/big.md", file_text="\u00e9" * 6)
    assert "That is 12 bytes; a memory file holds at most 10 ([plugins.memory] max_file_bytes)" in text
    await ok(session, command="create", path="/memories/a.md", file_text="0123456789")
    await ok(session, command="create", path="/memories/b.md", file_text="0123456789")
    text = await refused(session, command="create", path="/memories/c.md", file_text="0123456")
    assert "would then hold 27 bytes, over their limit of 25 ([plugins.memory] max_total_bytes)" in text
    await ok(session, command="create", path="/memories/c.md", file_text="")
    text = await refused(session, command="create", path="/memories/d.md", file_text="")
    assert "There are already 3 memory files, the most there may be ([plugins.memory] max_files)" in text
    text = await refused(session, command="str_replace", path="/memories/a.md", old_str="0", new_str="00")
    assert "max_file_bytes" in text
    text = await refused(session, command="insert", path="/memories/c.md", insert_line=0, insert_text="123456")
    assert "max_total_bytes" in text
    assert (await ok(session, command="view", path="/memories/a.md")).endswith("     1\t0123456789")
    assert "(the file is empty)" in await ok(session, command="view", path="/memories/c.md")
    # Renaming and deleting need no room.
    await ok(session, command="rename", old_path="/memories/a.md", new_path="/memories/kept/a.md")
    await ok(session, command="delete", path="/memories/b.md")
    await ok(session, command="create", path="/memories/d.md", file_text="01234")


async def test_each_person_has_their_own_memories(tmp_path: Path, store_url: str,
                                                  user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.memory]\nperson = "ada"\n')
    toolbox = load(tmp_path)
    ada = toolbox.session("default")
    await ok(ada, command="create", path="/memories/who.md", file_text="ada's")
    bob = toolbox.session("default")
    use_person(bob, "bob")
    assert session_person(bob) == "bob" and session_person(ada) is None
    await refused(bob, command="view", path="/memories/who.md")
    await ok(bob, command="create", path="/memories/who.md", file_text="bob's")
    assert "ada's" in await ok(ada, command="view", path="/memories/who.md")
    assert "bob's" in await ok(bob, command="view", path="/memories/who.md")
    # A sub-agent's memories are its maker's person's.
    child = bob.child(access={"memory": "read"})
    assert session_person(child) == "bob"
    assert "bob's" in await ok(child, command="view", path="/memories/who.md")
    with pytest.raises(ValueError, match="printable"):
        use_person(bob, " bob")


async def test_a_project_cannot_say_whose_memories_these_are(tmp_path: Path, trust_project: Callable[[Path], Path],
                                                             user_config: Callable[[str], Path]) -> None:
    user_config('[plugins.memory]\nperson = "ada"\n')
    (tmp_path / ".pegboard").mkdir()
    (tmp_path / ".pegboard" / "config.toml").write_text('[plugins.memory]\nperson = "bob"\n')
    trust_project(tmp_path)
    toolbox = load(tmp_path)
    assert toolbox.plugin_config("memory").person == "ada"
    assert any("person" in i.what for i in toolbox.settings.ignored)


async def test_with_scope_project_each_project_has_its_own_set(tmp_path: Path, store_url: str,
                                                               user_config: Callable[[str], Path]) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    shared = load(one).session("default")
    await ok(shared, command="create", path="/memories/everywhere.md", file_text="x")
    assert "everywhere.md" in await ok(load(two).session("default"), command="view", path="/memories")
    user_config('[plugins.memory]\nscope = "project"\n')
    first = load(one).session("default")
    await ok(first, command="create", path="/memories/here.md", file_text="in one")
    assert "everywhere.md" not in await ok(first, command="view", path="/memories")
    second = load(two).session("default")
    assert "here.md" not in await ok(second, command="view", path="/memories")
    await ok(second, command="create", path="/memories/here.md", file_text="in two")
    assert "in one" in await ok(load(one).session("default"), command="view", path="/memories/here.md")


@pytest.mark.parametrize("mode, offered, asks", [
    ("default", True, False), ("acceptEdits", True, False), ("auto", True, False), ("dontAsk", True, False),
    ("bypassPermissions", True, False), ("read", True, False), ("workspace", True, False),
    ("unrestricted", True, False), ("ask", True, True), ("plan", False, False), ("none", False, False),
])
async def test_permissions_by_mode(tmp_path: Path, mode: str, offered: bool, asks: bool) -> None:
    host = ScriptedHost("allow", "allow")
    session = load(tmp_path, host).session(mode)
    assert ("memory" in session.catalogue().names()) is offered
    failed, text = await run(session, command="create", path="/memories/m.md", file_text="x")
    assert failed is not offered, text
    failed, text = await run(session, command="view", path="/memories/m.md")
    assert failed is not offered, text
    assert len(host.asks) == (2 if asks else 0)


@pytest.mark.slow
async def test_a_store_that_cannot_be_reached_is_said_so(tmp_path: Path, user_config: Callable[[str], Path]) -> None:
    pytest.importorskip("psycopg")
    user_config('[store]\nurl = "postgresql+psycopg://postgres@127.0.0.1:1/nowhere"\n')
    text = await refused(load(tmp_path).session("default"), command="create", path="/memories/a.md", file_text="x")
    assert text.startswith("The memory store could not be used: postgresql+psycopg://postgres@127.0.0.1:1/nowhere: ")
    assert text.endswith("Nothing was changed; try again later.") and "Traceback" not in text


async def test_a_deny_rule_on_memory_holds(tmp_path: Path, user_config: Callable[[str], Path]) -> None:
    user_config('[permissions]\ndeny = ["memory"]\n')
    text = await refused(load(tmp_path).session("bypassPermissions"), command="view", path="/memories")
    assert "denied by memory" in text


@pytest.mark.slow
async def test_every_write_is_in_the_audit_log(tmp_path: Path, store_url: str,
                                               user_config: Callable[[str], Path]) -> None:
    from sqlalchemy import select

    from pegboard._services.audit import flush_all
    from pegboard._services.tables import audit

    user_config("\n[audit]\nenabled = true\n")
    toolbox = load(tmp_path)
    session = toolbox.session("default", session_id="remembering")
    await ok(session, command="create", path="/memories/a.md", file_text="the api_key=abc123 is not kept")
    await ok(session, command="str_replace", path="/memories/a.md", old_str="not", new_str="never")
    await ok(session, command="rename", old_path="/memories/a.md", new_path="/memories/b.md")
    await ok(session, command="delete", path="/memories/b.md")
    await refused(session, command="view", path="/memories/../x")
    flush_all()
    with toolbox.plugins.stores("pegboard").begin(read_only=True) as conn:
        rows = [dict(r._mapping) for r in conn.execute(select(audit).where(audit.c.tool == "memory")
                                                       .order_by(audit.c.id))]
    assert [(r["decision"], r["session_id"], r["source"]) for r in rows] == (
        [("allow", "remembering", "plugin memory")] * 4 + [("deny", "remembering", "plugin memory")])
    assert [r["reason"].split(":")[0] for r in rows[:4]] == [
        "memory create /memories/a.md", "memory str_replace /memories/a.md",
        "memory rename /memories/a.md to /memories/b.md", "memory delete /memories/b.md"]
    assert 'command="create"' in rows[0]["input_preview"] and 'path="/memories/a.md"' in rows[0]["input_preview"]
    assert "abc123" not in rows[0]["input_preview"]  # the content is redacted like any input
    assert 'old_path="/memories/a.md" new_path="/memories/b.md"' in rows[2]["input_preview"]
    assert "/memories/../x" in rows[4]["input_preview"] and "would step out" in rows[4]["reason"]


@pytest.mark.slow
def test_switched_off_it_is_gone_and_imports_nothing(tmp_path: Path, pegboard_env: Any) -> None:
    pegboard_env.user_config("[plugins.memory]\nenabled = false\n")
    script = ("import sys, json\nfrom pegboard import Toolbox\n"
              f"tb = Toolbox.load(cwd={str(tmp_path)!r})\n"
              "s = tb.session('default')\n"
              "print(json.dumps({'tools': sorted(tb.tools), 'offered': s.catalogue().names(),\n"
              "  'imported': sorted(m for m in sys.modules if m.startswith(('pegboard.plugins.memory',"
              " 'sqlalchemy')))}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy(),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert "memory" not in found["tools"] and "memory" not in found["offered"]
    assert found["imported"] == []
    listed = subprocess.run([str(Path(sys.executable).parent / "pegboard"), "--help"], capture_output=True,
                            text=True, env=os.environ.copy(), timeout=120)
    assert listed.returncode == 0 and "memory" not in listed.stdout


@pytest.mark.slow
def test_switched_on_loading_imports_no_store(tmp_path: Path) -> None:
    script = ("import sys, json\nfrom pegboard import Toolbox\n"
              f"tb = Toolbox.load(cwd={str(tmp_path)!r}, plugins=['memory'])\n"
              "s = tb.session('default')\n"
              "names = s.catalogue().names()\n"
              "print(json.dumps({'offered': names, 'imported': sorted(m for m in sys.modules\n"
              "  if m.startswith(('sqlalchemy', 'pegboard.plugins.memory._')))}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy(),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert "memory" in found["offered"]
    # the schema shown needs the input model; the store, the handler and the commands wait for a call
    assert found["imported"] == ["pegboard.plugins.memory._config", "pegboard.plugins.memory._models"]

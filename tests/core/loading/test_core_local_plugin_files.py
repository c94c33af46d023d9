"""One-file local plugins are held to what ssh holds a key file to: the
file, every folder up to the plugins folder and every module a plugin
imports from there are the person's own and writable by nobody else, and
only their source is ever run (issue 29)."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import textwrap
from pathlib import Path

from pegboard import Toolbox
from pegboard.testing import PegboardEnv

PLUGIN = '''
from pydantic import BaseModel
from pegboard import Tool, hookimpl
from pegboard_local import _words

class NoInput(BaseModel):
    pass

async def hello(args, ctx):
    return _words.WORD

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Hello", handler=hello, input_model=NoInput, read_only=True, permission="read",
                  description="Says a word."))
'''


def load_error(root: Path, name: str = "hello") -> str:
    return Toolbox.load(cwd=root, plugins=[name]).records[name].error or ""


def test_a_group_writable_plugin_file_is_refused(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("_words", "WORD = 'hi'\n")
    path = pegboard_env.local_plugin("hello", PLUGIN)
    path.chmod(0o664)
    error = load_error(tmp_path)
    assert f"{path} is writable by its group" in error
    path.chmod(0o644)
    assert load_error(tmp_path) == ""


def test_a_group_writable_plugins_folder_is_refused(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("_words", "WORD = 'hi'\n")
    path = pegboard_env.local_plugin("hello", PLUGIN)
    path.parent.chmod(0o775)
    try:
        error = load_error(tmp_path)
    finally:
        path.parent.chmod(0o755)
    assert f"{path.parent} is writable by its group" in error


def test_a_world_writable_helper_a_plugin_imports_is_refused(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    helper = pegboard_env.local_plugin("_words", "WORD = 'hi'\n")
    pegboard_env.local_plugin("hello", PLUGIN)
    helper.chmod(0o646)
    error = load_error(tmp_path)
    assert f"{helper} is writable by every user" in error


def test_a_helper_in_a_group_writable_sub_folder_is_refused(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("hello", PLUGIN.replace("from pegboard_local import _words",
                                                      "from pegboard_local._lib import words as _words"))
    lib = pegboard_env.config_dir / "plugins" / "_lib"
    lib.mkdir()
    (lib / "__init__.py").write_text("", encoding="utf-8")
    (lib / "words.py").write_text("WORD = 'hi'\n", encoding="utf-8")
    lib.chmod(0o775)
    try:
        error = load_error(tmp_path)
    finally:
        lib.chmod(0o755)
    assert f"{lib} is writable by its group" in error


def plant_bytecode(source: Path, other_code: str) -> Path:
    """A ``.pyc`` in ``__pycache__`` whose header matches ``source`` (mtime
    and size) but that holds ``other_code``: what the standard loader runs."""
    original = source.read_bytes()
    fake = source.with_name("fake_source.txt")
    body = other_code.encode()
    assert len(body) <= len(original)
    fake.write_bytes(body + b"#" * (len(original) - len(body)))
    st = source.stat()
    os.utime(fake, ns=(st.st_atime_ns, st.st_mtime_ns))
    cached = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(fake), cfile=str(cached), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    fake.unlink()
    return cached


def test_planted_bytecode_for_an_unchanged_source_is_not_run(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    helper = pegboard_env.local_plugin("_words", "WORD = 'the source ran'\n" + "#" * 200 + "\n")
    path = pegboard_env.local_plugin("hello", PLUGIN)
    planted = [plant_bytecode(helper, "WORD = 'planted'\n"),
               plant_bytecode(path, textwrap.dedent(PLUGIN).replace("return _words.WORD", "return 'planted'"))]
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["hello"])
    assert toolbox.records["hello"].error is None
    import asyncio

    text = asyncio.run(toolbox.session().call("Hello", {})).text_content()
    assert text == "the source ran"
    # ... and nothing was written there either.
    assert sorted(p.name for p in planted[0].parent.iterdir()) == sorted(p.name for p in planted)

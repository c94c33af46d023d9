"""A command too long for the system to start reaches the model as a sentence
about its call (issue 30 item 7), not as ``OSError: [Errno 7] Argument list
too long: '/usr/bin/bwrap'``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard.plugins.shell._sandbox import backend_for

pytestmark = pytest.mark.anyio

BIG = "echo " + "x" * 3_000_000 + " | wc -c"  # about 3 MB


@pytest.fixture(params=["off", "auto"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "auto" and backend_for("auto") == "none":
        pytest.skip("no sandbox backend")
    return str(request.param)


def _session(tmp_path: Path, sandbox: str, env: dict[str, str] | None = None) -> Any:
    root = (tmp_path / "proj").resolve()
    root.mkdir(exist_ok=True)
    cfg = tmp_path / "shell.toml"
    text = f'[plugins.shell]\nsandbox = "{sandbox}"\n'
    if env:
        text += "env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + "}\n"
    cfg.write_text(text)
    return Toolbox.load(cwd=root, plugins=["shell"], config=cfg).session(mode="bypassPermissions")


def _is_a_sentence_about_the_call(text: str) -> None:
    assert text.startswith("The command is too long to run"), text
    assert "Write the script to a file" in text, text
    for raw in ("OSError", "Errno", "Argument list too long", "/usr/bin/bwrap", "/bin/bash"):
        assert raw not in text, text


async def test_a_3_mb_command_is_refused_with_a_sentence(tmp_path: Path, sandbox: str) -> None:
    s = _session(tmp_path, sandbox)
    try:
        r = await s.call("Bash", {"command": BIG})
        assert r.is_error
        _is_a_sentence_about_the_call(r.text_content())
        assert "3,000,013 bytes" in r.text_content()
        background = await s.call("Bash", {"command": BIG, "run_in_background": True})
        assert background.is_error
        _is_a_sentence_about_the_call(background.text_content())
        watched = await s.call("Monitor", {"command": BIG, "description": "big"})
        assert watched.is_error
        _is_a_sentence_about_the_call(watched.text_content())
        # a long command that fits still runs
        fits = await s.call("Bash", {"command": "echo " + "y" * 100_000 + " | wc -c"})
        assert not fits.is_error and fits.text_content().strip() == "100001", fits.text_content()[:200]
    finally:
        await s.aclose()


@pytest.mark.slow
async def test_an_environment_past_the_systems_limit_is_said_as_well(tmp_path: Path, sandbox: str) -> None:
    """The command fits one argument, but with the environment the whole start
    passes the system's limit (ARG_MAX): the system's E2BIG becomes the same kind of sentence."""
    env = {f"BIG_{i}": "z" * 120_000 for i in range(40)}  # 4.8 MB of environment
    s = _session(tmp_path, sandbox, env)
    try:
        r = await s.call("Bash", {"command": "echo hi"})
        assert r.is_error
        _is_a_sentence_about_the_call(r.text_content())
        assert "environment" in r.text_content()
    finally:
        await s.aclose()

"""Session.decide (the decision without running) and approvals given ahead
(session.call(..., approval=Answer(...))), with the built-in fs plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard import Answer, Toolbox

pytestmark = pytest.mark.anyio


def _session(root: Path, config: str = "", mode: str = "default"):  # type: ignore[no-untyped-def]
    if config:
        (root / ".pegboard").mkdir(exist_ok=True)
        (root / ".pegboard" / "config.toml").write_text(config)
    return Toolbox.load(cwd=root, plugins=["fs"]).session(mode)


async def test_decide_says_allow_ask_or_deny_without_running(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    session = _session(tmp_path, '[permissions]\ndeny = ["Read(/**/secret.txt)"]\n')
    read = await session.decide("Read", {"file_path": str(tmp_path / "a.txt")})
    assert read.decision == "allow"
    write = await session.decide("Write", {"file_path": str(tmp_path / "b.txt"), "content": "y"})
    assert write.decision == "ask" and write.reason and write.source
    assert not (tmp_path / "b.txt").exists()  # nothing ran
    denied = await session.decide("Read", {"file_path": str(tmp_path / "secret.txt")})
    assert denied.decision == "deny" and "secret.txt" in denied.source
    assert (await session.decide("Raed", {})).source == "catalogue"
    invalid = await session.decide("Read", {"file_path": 3})
    assert invalid.decision == "deny" and invalid.source == "validation"
    # Arguments as a model sends them: a JSON string, nulls for what it leaves out.
    assert (await session.decide("Read", f'{{"file_path": "{tmp_path / "a.txt"}", "limit": null}}')).decision \
        == "allow"


async def test_an_approval_given_ahead_settles_the_ask(tmp_path: Path) -> None:
    session = _session(tmp_path)
    target = tmp_path / "b.txt"
    headless = await session.call("Write", {"file_path": str(target), "content": "y"})
    assert headless.is_error and not target.exists()  # no one to ask: denied
    approved = await session.call("Write", {"file_path": str(target), "content": "y"},
                                  approval=Answer(allow=True))
    assert not approved.is_error, approved.text_content()
    assert target.read_text() == "y"
    # Once: the next write asks again.
    assert (await session.decide("Write", {"file_path": str(tmp_path / "c.txt"), "content": "z"})).decision == "ask"


async def test_a_denial_given_ahead_tells_the_model_why(tmp_path: Path) -> None:
    session = _session(tmp_path)
    result = await session.call("Write", {"file_path": str(tmp_path / "b.txt"), "content": "y"},
                                approval=Answer(allow=False, message="Not now: the release is frozen."))
    assert result.is_error and "the release is frozen" in result.text_content()
    assert not (tmp_path / "b.txt").exists()


async def test_approve_always_remembers_the_rule(tmp_path: Path) -> None:
    session = _session(tmp_path)
    write = {"file_path": str(tmp_path / "b.txt"), "content": "y"}
    rule = (await session.decide("Write", write)).suggestions[0]
    result = await session.call("Write", write, approval=Answer(allow=True, remember="session", rule=rule))
    assert not result.is_error, result.text_content()
    again = await session.decide("Write", {"file_path": str(tmp_path / "c.txt"), "content": "z"})
    assert again.decision == "allow" and "session grant" in again.source


async def test_an_approval_cannot_turn_a_deny_into_an_allow(tmp_path: Path) -> None:
    session = _session(tmp_path, '[permissions]\ndeny = ["Write"]\n')
    result = await session.call("Write", {"file_path": str(tmp_path / "b.txt"), "content": "y"},
                                approval=Answer(allow=True, remember="project"))
    assert result.is_error and "denied by Write" in result.text_content()
    assert not (tmp_path / "b.txt").exists()
    assert not (tmp_path / ".pegboard" / "granted.toml").exists()
    # A protected path in bypassPermissions is denied before any approval is looked at.
    bypass = _session(tmp_path, "", mode="bypassPermissions")
    git = tmp_path / ".git"
    git.mkdir()
    protected = await bypass.call("Write", {"file_path": str(git / "config"), "content": "x"},
                                  approval=Answer(allow=True))
    assert protected.is_error and not (git / "config").exists()

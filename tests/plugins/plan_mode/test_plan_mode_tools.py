"""EnterPlanMode and ExitPlanMode: the person approves the switch, plan mode
refuses writes, an approved plan leaves plan mode in the mode picked."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio


def load(root: Path, host: ScriptedHost | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["plan_mode", "fs"], host=host)


async def test_enter_approved_then_a_write_refused_exit_approved_then_the_write_allowed(tmp_path: Path) -> None:
    host = ScriptedHost(True)
    session = load(tmp_path, host).session("default")
    target = str(tmp_path / "notes.txt")

    entered = await session.call("EnterPlanMode", {})
    assert not entered.is_error, entered.text_content()
    [asked] = host.asks
    assert asked.request.tool.name == "EnterPlanMode" and asked.decision.firm
    assert session.mode == "plan"
    assert host.events_of("mode.changed") == [{"mode": "plan", "previous": "default"}]

    refused = await session.call("Write", {"file_path": target, "content": "x"})
    assert refused.is_error and "not offered in plan" in refused.text_content()
    assert not Path(target).exists()
    assert "Write" not in session.catalogue().names()

    host.forms.append({"mode": "acceptEdits"})
    exited = await session.call("ExitPlanMode", {"plan": "1. Write notes.txt\n2. Check it", "allowedPrompts": [
        {"tool": "Bash", "prompt": "run tests"}]})
    assert not exited.is_error, exited.text_content()
    assert "approved the plan; the session is now in acceptEdits mode" in exited.text_content()
    [(source, message, schema)] = host.elicited
    assert source == "ExitPlanMode" and "1. Write notes.txt" in message
    assert "acceptEdits" in schema["properties"]["mode"]["enum"]
    assert session.mode == "acceptEdits"
    assert host.events_of("mode.changed")[-1] == {"mode": "acceptEdits", "previous": "plan"}

    written = await session.call("Write", {"file_path": target, "content": "x"})
    assert not written.is_error, written.text_content()
    assert Path(target).read_text() == "x"
    assert len(host.asks) == 1  # acceptEdits wrote inside the project without asking


async def test_exit_in_default_mode_leaves_writes_asking(tmp_path: Path) -> None:
    host = ScriptedHost(True)
    session = load(tmp_path, host).session("default")
    await session.call("EnterPlanMode", {})
    plan = tmp_path / "PLAN.md"
    plan.write_text("# Plan\nwrite a.txt\n")
    host.forms.append({"mode": "default"})
    exited = await session.call("ExitPlanMode", {"planFile": "PLAN.md"})
    assert "now in default mode" in exited.text_content()
    assert "write a.txt" in host.elicited[0][1]
    host.answer(False)
    denied = await session.call("Write", {"file_path": str(tmp_path / "a.txt"), "content": "x"})
    assert denied.is_error and len(host.asks) == 2  # the Write asked, and the person said no


async def test_a_plan_not_approved_stays_in_plan_mode(tmp_path: Path) -> None:
    host = ScriptedHost(True)
    session = load(tmp_path, host).session("default")
    await session.call("EnterPlanMode", {})
    host.forms.append({"mode": "keep planning", "feedback": "split step 2"})
    again = await session.call("ExitPlanMode", {"plan": "do it all at once"})
    assert "did not approve" in again.text_content() and "split step 2" in again.text_content()
    declined = await session.call("ExitPlanMode", {"plan": "still all at once"})  # no form scripted: declined
    assert "did not approve" in declined.text_content()
    assert session.mode == "plan"
    nothing = await session.call("ExitPlanMode", {})
    assert nothing.is_error and "Give the plan" in nothing.text_content()


async def test_the_switch_is_allowed_in_auto_and_denied_where_nobody_answers(tmp_path: Path) -> None:
    auto = load(tmp_path).session("auto")
    assert not (await auto.call("EnterPlanMode", {})).is_error and auto.mode == "plan"
    exited = await auto.call("ExitPlanMode", {"plan": "p"})
    assert exited.is_error and "Nobody can approve" in exited.text_content() and auto.mode == "plan"
    default = load(tmp_path).session("default")  # a firm ask with no host to answer: a deny
    refused = await default.call("EnterPlanMode", {})
    assert refused.is_error and default.mode == "default"
    levelled = load(tmp_path).session("read")
    assert (await levelled.decide("EnterPlanMode", {})).decision == "deny"


async def test_offered_only_to_a_top_level_session(tmp_path: Path) -> None:
    session = load(tmp_path, ScriptedHost()).session("default")
    assert {"EnterPlanMode", "ExitPlanMode"} <= set(session.catalogue().names())
    child = session.child(label="helper")
    assert not {"EnterPlanMode", "ExitPlanMode"} & set(child.catalogue().names())

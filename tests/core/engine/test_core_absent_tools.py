"""A tool absent with a reason: ``Tool(absent=...)`` for every session,
``offered_when`` returning ``Absent(...)`` for some. Listings and ``tools show``
give the reason, a call gets it as its error; WebSearch without a key is one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pegboard import Absent, Session, Tool, hookimpl
from pegboard.testing import CLIRunner, PegboardEnv, load_toolbox

pytestmark = pytest.mark.anyio

NO_KEY = "no LOOKUP_KEY is set (the operator sets it)"


def _has_log(session: Session) -> bool | Absent:
    return session.plugin_state("lookup").get("log") is not None or Absent("the host keeps no conversation log.")


class Lookup:
    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        register(Tool(name="Lookup", handler=lambda args, ctx: "found", input_schema={"type": "object"},
                      read_only=True, permission="read", absent=NO_KEY))
        register(Tool(name="Recall", handler=lambda args, ctx: "recalled", input_schema={"type": "object"},
                      read_only=True, permission="read", offered_when=_has_log))


def test_absent_needs_a_reason_and_is_falsy() -> None:
    assert not Absent("no key") and Absent("no key.").reason == "no key"
    with pytest.raises(ValueError, match="reason"):
        Absent("  ")
    with pytest.raises(ValueError, match="absent must be the reason"):
        Tool(name="X", handler=lambda a, c: "", input_schema={"type": "object"}, absent="")


@pytest.mark.slow
async def test_a_call_gets_the_reason_it_can_act_on(tmp_path: Path) -> None:
    toolbox = load_toolbox({"lookup": Lookup()}, cwd=tmp_path)
    session = toolbox.session("default")
    assert "Lookup" not in session.catalogue().names() and "Recall" not in session.catalogue().names()
    result = await session.call("Lookup", {})
    assert result.is_error and result.text_content() == f"Lookup is not available here: {NO_KEY}."
    decision = await session.decide("Lookup", {})
    assert decision.decision == "deny" and NO_KEY in decision.reason
    result = await session.call("Recall", {})
    assert result.text_content() == "Recall is not offered in this session: the host keeps no conversation log."
    session.plugin_state("lookup")["log"] = []
    assert (await session.call("Recall", {})).text_content() == "recalled"


def test_listing_and_show_give_the_reason(tmp_path: Path) -> None:
    runner = CLIRunner(tmp_path, plugins={"lookup": Lookup()})
    listed = runner("tools", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["Lookup"]["enabled"] is False and rows["Lookup"]["status"] == f"absent: {NO_KEY}"
    assert rows["Lookup"]["absent"] == NO_KEY
    # offered to some sessions: listed as available, with why a plain session lacks it
    assert rows["Recall"]["enabled"] is True and rows["Recall"]["absent"] == "the host keeps no conversation log"
    assert "a plain one lacks it: the host keeps no conversation log" in rows["Recall"]["status"]
    shown = runner("tools", "show", "Lookup")
    assert shown.exit_code == 0, shown.output
    assert f"absent: {NO_KEY}" in shown.stdout.splitlines()[0]


def test_websearch_without_a_key_is_absent_with_the_reason(tmp_path: Path, pegboard_env: PegboardEnv) -> None:
    runner = CLIRunner(tmp_path, installed=["web"])
    rows = {r["name"]: r for r in json.loads(runner("tools", "list", "--json").stdout)}
    assert rows["WebSearch"]["enabled"] is False
    assert "PEGBOARD_WEB_SEARCH_API_KEY" in rows["WebSearch"]["absent"]
    shown = runner("tools", "show", "WebSearch")
    assert shown.exit_code == 0 and "absent: no search API key" in shown.stdout, shown.output
    called = runner("call", "WebSearch", "--input", '{"query": "pegboard"}')
    assert called.exit_code == 1 and "WebSearch is not available here: no search API key" in called.stdout
    pegboard_env.user_config('[plugins.web]\nsearch_api_key = "k"\n')
    rows = {r["name"]: r for r in json.loads(runner("tools", "list", "--json").stdout)}
    assert rows["WebSearch"]["enabled"] is True and rows["WebSearch"]["absent"] is None

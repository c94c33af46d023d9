"""Tool.offered_when and Tool.session_schema: a tool offered to some sessions
only, with a schema per session; Session.set_mode's mode.changed event."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from pegboard import Session, Tool, Toolbox, hookimpl
from pegboard.testing import ScriptedHost, load_toolbox

pytestmark = pytest.mark.anyio


def _wants_it(session: Session) -> bool:
    return session.plugin_state("picky").get("wanted", False)


def _broken(session: Session) -> bool:
    raise RuntimeError("the predicate's own bug")


class Picky:
    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        register(Tool(name="Picky", handler=lambda args, ctx: "ok", input_schema={"type": "object"},
                      read_only=True, permission="read", offered_when=_wants_it,
                      session_schema=lambda s: {"type": "object", "properties": {"id": {"const": s.id}}}))
        register(Tool(name="Broken", handler=lambda args, ctx: "ok", input_schema={"type": "object"},
                      read_only=True, permission="read", offered_when=f"{__name__}:_broken"))


def test_the_new_parameters_are_public() -> None:
    assert "output_schema" in inspect.signature(Toolbox.session).parameters
    params = inspect.signature(Tool).parameters
    assert "offered_when" in params and "session_schema" in params


async def test_a_tool_is_offered_only_where_its_predicate_says(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    toolbox = load_toolbox({"picky": Picky()}, cwd=tmp_path)
    session = toolbox.session("default", session_id=None)
    assert "Picky" not in session.catalogue().names()
    refused = await session.call("Picky", {})
    assert refused.is_error and "not offered in this session" in refused.text_content()
    session.plugin_state("picky")["wanted"] = True
    catalogue = session.catalogue()
    [picky] = [t for t in catalogue.tools if t.name == "Picky"]
    assert picky.input_schema["properties"]["id"] == {"const": session.id}
    assert not (await session.call("Picky", {})).is_error
    # one that raises hides its tool and is reported, the rest stay
    assert "Broken" not in catalogue.names()
    assert "offered_when of tool 'Broken' failed: RuntimeError: the predicate's own bug" in capsys.readouterr().err
    assert {s.tool.name for s in toolbox.tool_statuses() if s.enabled} >= {"Picky", "Broken"}


def test_set_mode_tells_the_host_the_mode_changed(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = Toolbox.load(cwd=tmp_path, plugins=[], host=host).session("default")
    session.set_mode("plan")
    session.set_mode("plan")  # no change, no event
    assert host.events_of("mode.changed") == [{"mode": "plan", "previous": "default"}]

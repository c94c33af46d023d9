"""The todos style chosen per session by the host (``use_style``): both
styles in one toolbox, the config's style the default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pegboard import Session, Toolbox
from pegboard.plugins.todos import session_style, use_style
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio


def offered(session: Session) -> set[str]:
    catalogue = session.catalogue()
    return set(catalogue.names()) | {d.name for d in catalogue.deferred}


async def test_two_sessions_of_one_toolbox_each_with_its_style(tmp_path: Path) -> None:
    host = ScriptedHost()
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["todos"], host=host)
    tasks, older = toolbox.session("default"), toolbox.session("default")
    use_style(older, "todowrite")
    assert session_style(tasks) == "tasks" and session_style(older) == "todowrite"
    assert {"TaskCreate", "TaskList"} <= offered(tasks) and "TodoWrite" not in offered(tasks)
    assert "TodoWrite" in offered(older) and not {"TaskCreate", "TaskGet", "TaskUpdate", "TaskList"} & offered(older)
    assert host.events_of("catalogue.changed")[-1]["style"] == "todowrite"
    created = await tasks.call("TaskCreate", {"subject": "Parse", "description": "the parser"})
    assert "Created task #1: Parse" in created.text_content()
    wrote = await older.call("TodoWrite", {"todos": [{"content": "Parse", "status": "pending",
                                                      "activeForm": "Parsing"}]})
    assert not wrote.is_error and "[ ] Parse" in wrote.text_content()
    assert (await older.call("TaskCreate", {"subject": "x", "description": "y"})).is_error  # not its style
    assert (await tasks.call("TodoWrite", {"todos": []})).is_error
    with pytest.raises(ValueError, match="tasks, todowrite"):
        use_style(tasks, "checklist")  # type: ignore[arg-type]


async def test_the_configs_style_is_the_default_a_session_may_leave(tmp_path: Path, user_config: Any) -> None:
    user_config('[plugins.todos]\nstyle = "todowrite"\n')
    toolbox = Toolbox.load(cwd=tmp_path, plugins=["todos"])
    plain, chosen = toolbox.session("default"), toolbox.session("default")
    use_style(chosen, "tasks")
    assert "TodoWrite" in offered(plain) and "TaskCreate" not in offered(plain)
    assert "TaskCreate" in offered(chosen) and "TodoWrite" not in offered(chosen)
    listed = await chosen.call("TaskList", {})
    assert not listed.is_error and toolbox.tools["TaskList"].plugin == "todos"

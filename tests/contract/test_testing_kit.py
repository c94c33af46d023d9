"""pegboard.testing's fixtures, used as a plugin author uses them: a plugin
module that is not installed, loaded alone or beside the installed ones; a
host answering asks from a script; decisions without running; the CLI."""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Any

import pytest

from pegboard import Answer, Tool, Vote, hookimpl
from pegboard.paths import config_dir
from pegboard.testing import (
    CLIRunner,
    PegboardEnv,
    PluginLoadError,
    Project,
    ScriptedHost,
    call,
    decide,
    load_toolbox,
)


class Notes:
    """A plugin object (not a module, not installed): Note asks before it writes."""

    @hookimpl
    def pegboard_register_tools(self, register: Any) -> None:
        register(Tool(name="Note", handler=self.note, input_schema={
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            permission="workspace", description="Keeps a note.", vote=self.vote))

    @staticmethod
    async def note(args: dict[str, Any], ctx: Any) -> str:
        ctx.emit("note.kept", {"text": args["text"]})
        return f"kept: {args['text']}"

    @staticmethod
    def vote(request: Any) -> Vote:
        return Vote.ask("Note keeps what it is given", suggest=("Note",))


@pytest.fixture
def pegboard_plugins() -> dict[str, object]:
    return {"notes": Notes()}


def test_the_environment_is_the_test_s_own(pegboard_env: PegboardEnv) -> None:
    assert config_dir() == pegboard_env.config_dir and config_dir().is_relative_to(pegboard_env.home)
    assert os.environ["PEGBOARD_POLICY"] == str(pegboard_env.policy_path)
    assert not [n for n in os.environ if n.startswith("PEGBOARD_") and n != "PEGBOARD_POLICY"]
    pegboard_env.user_config("[permissions]\ndeny = ['Note']\n")
    assert "deny = ['Note']" in (pegboard_env.config_dir / "config.toml").read_text()


def test_every_pegboard_variable_is_unset(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pegboard.testing import isolate

    monkeypatch.setenv("PEGBOARD_PLUGINS", "fs")
    monkeypatch.setenv("PEGBOARD_SOMETHING_NEW", "1")
    env = isolate(tmp_path, monkeypatch)
    assert "PEGBOARD_PLUGINS" not in os.environ and "PEGBOARD_SOMETHING_NEW" not in os.environ
    assert env.data_dir.is_relative_to(tmp_path)


def test_a_plugin_that_is_not_installed_loads_alone(pegboard_toolbox: Any) -> None:
    assert set(pegboard_toolbox.records) == {"notes"}
    assert pegboard_toolbox.records["notes"].origin == "given"
    assert "Note" in pegboard_toolbox.tools and "Read" not in pegboard_toolbox.tools


def test_or_beside_the_installed_ones(pegboard_load: Any) -> None:
    toolbox = pegboard_load(installed=["fs"])
    assert {"notes", "fs"} <= set(toolbox.records) and "Read" in toolbox.tools
    everything = pegboard_load(installed=None)
    assert {"notes", "fs", "shell", "web"} <= set(everything.records)


def test_a_module_given_by_import_string_or_object(pegboard_project: Project) -> None:
    module = types.ModuleType("kit_inline")
    exec("from pegboard import Tool, hookimpl\n"
         "@hookimpl\n"
         "def pegboard_register_tools(register):\n"
         "    register(Tool(name='Inline', handler=lambda a, c: 'x', input_schema={'type': 'object'},\n"
         "                  description='d', read_only=True, permission='read'))\n", module.__dict__)
    assert "Inline" in load_toolbox({"inline": module}, cwd=pegboard_project.root).tools
    with pytest.raises(PluginLoadError, match="inline: failed to import no_such_module_here"):
        load_toolbox({"inline": "no_such_module_here"}, cwd=pegboard_project.root)
    lenient = load_toolbox({"inline": "no_such_module_here"}, cwd=pegboard_project.root, strict=False)
    assert "ModuleNotFoundError" in (lenient.records["inline"].error or "")


def test_the_host_answers_asks_from_its_script(pegboard_host: ScriptedHost, pegboard_call: Any) -> None:
    pegboard_host.answer("allow", Answer(allow=False, message="not that one"))
    assert pegboard_call("Note", {"text": "a"}).text_content() == "kept: a"
    refused = pegboard_call("Note", {"text": "b"})
    assert refused.is_error and "not that one" in refused.text_content()
    assert [a.tool for a in pegboard_host.asks] == ["Note", "Note"]
    assert pegboard_host.asks[0].decision.reason == "Note keeps what it is given"
    assert pegboard_host.events_of("note.kept") == [{"tool": "Note", "call_id": "c1", "text": "a"}]
    # past the script: denied, and kept as unexpected
    unscripted = pegboard_call("Note", {"text": "c"})
    assert unscripted.is_error and "no answer scripted" in unscripted.text_content()
    assert [a.request.input["text"] for a in pegboard_host.unexpected] == ["c"]


def test_an_answer_remembered_for_the_session(pegboard_host: ScriptedHost, pegboard_session: Any,
                                              pegboard_decide: Any) -> None:
    pegboard_host.answer("session")
    assert pegboard_decide("Note", {"text": "a"}).decision == "ask"
    assert call(pegboard_session, "Note", {"text": "a"}).text_content() == "kept: a"
    assert pegboard_decide("Note", {"text": "b"}).decision == "allow"
    assert call(pegboard_session, "Note", {"text": "b"}).text_content() == "kept: b"
    assert len(pegboard_host.asks) == 1


def test_decide_runs_nothing(pegboard_load: Any, pegboard_host: ScriptedHost) -> None:
    toolbox = pegboard_load(config="[permissions]\ndeny = ['Note']\n")
    decision = decide(toolbox, "Note", {"text": "a"})
    assert decision.decision == "deny" and decision.source.startswith("rule Note in ")
    assert decide(toolbox, "Nope", {}).source == "catalogue"
    assert pegboard_host.asks == [] and pegboard_host.events == []


def test_an_untrusted_project_config_only_narrows(pegboard_project: Project, pegboard_load: Any) -> None:
    pegboard_project.config("[permissions]\nallow = ['Note']\n", trusted=False)
    assert decide(pegboard_load(), "Note", {"text": "a"}).decision == "ask"
    pegboard_project.trust()
    assert decide(pegboard_load(), "Note", {"text": "a"}).decision == "allow"


@pytest.mark.anyio
async def test_in_an_async_test_await_the_session(pegboard_session: Any, pegboard_host: ScriptedHost) -> None:
    pegboard_host.answer(True)
    result = await pegboard_session.call("Note", {"text": "a"})
    assert result.text_content() == "kept: a"
    with pytest.raises(RuntimeError, match="in an async test, await session.call"):
        call(pegboard_session, "Note", {"text": "b"})


def test_the_command_line_with_the_test_s_plugins(pegboard_cli: CLIRunner) -> None:
    listed = pegboard_cli("tools", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert {r["name"]: r["plugin"] for r in json.loads(listed.stdout)}.get("Note") == "notes"
    plugins = pegboard_cli("plugins", "list", "--json")
    assert [(r["name"], r["origin"]) for r in json.loads(plugins.stdout)] == [("notes", "given")]
    # stdin is not a terminal: nobody is asked, and the ask is a deny that says so
    refused = pegboard_cli("call", "Note", "--input", '{"text": "a"}')
    assert refused.exit_code != 0 and "Note keeps what it is given" in refused.output


def test_the_check_fixture(pegboard_check: Any) -> None:
    report = pegboard_check("notes")
    assert report.ok, str(report)
    assert pegboard_check("nope").problems[0].startswith("no plugin called 'nope'")

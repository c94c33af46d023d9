"""One call through the pipeline: validation, pegboard's own parameters,
failures of every kind, large results, the scratchpad, deferred tools and
external schemas. Tools come from a real entry-point plugin (_pipetest_tools)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401
from pegboard import Session, Toolbox, hookimpl

pytestmark = pytest.mark.anyio


class Events:
    """A host that records every pegboard_event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    @hookimpl
    def pegboard_event(self, session: Session, kind: str, data: dict[str, Any]) -> None:
        self.events.append((session.id, kind, data))


def load(factory: PluginFactory, config: str | None = None, host: object | None = None) -> Toolbox:
    return factory(PIPETEST, config=config, host=host)


def text(result: Any) -> str:
    return result.text_content()  # type: ignore[no-any-return]


# --- validation -------------------------------------------------------------------


async def test_validation_names_each_bad_field_and_what_was_expected(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Echo", {"count": "many", "mode": "shout"})
    assert result.is_error
    message = text(result)
    assert "nothing was run" in message
    assert "- text: required but missing; expected string (Text to echo.)" in message
    assert "- count:" in message and "expected integer >= 1 <= 5" in message and '(got "many")' in message
    assert "- mode:" in message and "expected one of \"plain\", \"upper\"" in message
    assert session.plugin_state("pipetest").get("seen") is None  # the tool never ran


async def test_arguments_as_json_text_and_bad_json(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    assert text(await session.call("Echo", '{"text": "hi", "count": 2}')) == "hihi"
    bad = await session.call("Echo", '{"text": ')
    assert bad.is_error and "not valid JSON" in text(bad)
    listed = await session.call("Echo", [1, 2])
    assert listed.is_error and "must be a JSON object, not list" in text(listed)


async def test_unknown_argument_is_reported_not_silently_dropped(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Echo", {"text": "a", "cuont": 3})
    assert not result.is_error
    assert text(result).startswith("a\n")
    assert "ignored unknown argument(s) 'cuont'" in text(result) and "count" in text(result)


async def test_unknown_tool_and_near_miss(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("echo", {"text": "a"})
    assert result.is_error and "Did you mean Echo?" in text(result)


# --- background and scratchpad: strict types, null, collisions ---------------------------


@pytest.mark.parametrize("value, expected", [
    ("yes", "background must be a boolean (true or false), not \"yes\""),
    (1, "background must be a boolean (true or false), not 1"),
])
async def test_background_must_be_boolean(plugin_factory: PluginFactory, value: Any, expected: str) -> None:
    session = load(plugin_factory, config="[background]\nenabled = true\n").session("workspace")
    result = await session.call("Echo", {"text": "a", "background": value})
    assert result.is_error and expected in text(result)
    assert session.plugin_state("pipetest").get("seen") is None
    assert session.tasks.list() == []


@pytest.mark.parametrize("value", [3, True, "", "   ", ["a"]])
async def test_scratchpad_must_be_non_empty_string(plugin_factory: PluginFactory, value: Any) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Echo", {"text": "a", "scratchpad": value})
    assert result.is_error and "scratchpad must be a non-empty string" in text(result)
    assert session.scratchpad == {}
    assert session.plugin_state("pipetest").get("seen") is None


async def test_null_counts_as_absent_and_both_are_removed(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory, config="[background]\nenabled = true\n").session("workspace")
    result = await session.call("Echo", {"text": "a", "background": None, "scratchpad": None})
    assert not result.is_error and text(result) == "a"
    result = await session.call("Echo", {"text": "b", "background": False, "scratchpad": "pad"})
    assert "Saved 1 characters of Echo output to scratchpad entry 'pad'" in text(result)
    # The handler never saw either parameter, and no "ignored unknown argument" advisory either.
    assert session.plugin_state("pipetest")["seen"] == [{"text": "a", "count": 1, "mode": "plain"},
                                                       {"text": "b", "count": 1, "mode": "plain"}]
    assert "ignored" not in text(result)


async def test_background_refused_when_switched_off(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Echo", {"text": "a", "background": True})
    assert result.is_error and "background calls are switched off" in text(result)
    # false is harmless: stripped, the call runs.
    assert text(await session.call("Echo", {"text": "a", "background": False})) == "a"


async def test_tool_own_background_and_scratchpad_pass_through_untouched(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory, config="[background]\nenabled = true\n").session("workspace")
    result = await session.call("Own", {"background": "blue", "scratchpad": 7})
    assert not result.is_error
    assert json.loads(text(result)) == {"background": "blue", "scratchpad": 7}
    assert session.scratchpad == {} and session.tasks.list() == []
    # The tool's own parameter is the tool's to validate: a string for its int is its error, not ours.
    bad = await session.call("Own", {"background": "red", "scratchpad": "notes"})
    assert bad.is_error and "Invalid arguments for Own" in text(bad) and "- scratchpad:" in text(bad)


async def test_external_schema_tool_keeps_its_own_background(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory, config="[background]\nenabled = true\n").session("workspace")
    result = await session.call("mcp__srv__add", {"n": 1, "background": "true-ish", "scratchpad": "s"})
    # background is the server's (a string it declared); scratchpad is ours and redirected.
    assert "Saved" in text(result) and session.tasks.list() == []
    assert json.loads(session.scratchpad["s"]) == {"background": "true-ish", "n": 1}


# --- external schemas ---------------------------------------------------------------


async def test_external_schema_mismatch_is_an_advisory_and_the_call_goes_through(
        plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("mcp__srv__plain", {"x": 5, "extra": True})
    assert not result.is_error
    first, advisory = result.content[0].text, result.content[-1].text  # type: ignore[union-attr]
    assert json.loads(first) == {"extra": True, "x": 5}  # the server got the arguments as sent
    assert advisory.startswith("Advisory:") and "x: 5 is not of type 'string'" in advisory
    clean = await session.call("mcp__srv__plain", {"x": "ok"})
    assert "Advisory" not in text(clean)


# --- a tool that raises, hangs, exits or returns garbage -----------------------------------


async def test_raising_tool_becomes_error_and_session_carries_on(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Boom", {})
    assert result.is_error and text(result) == "Boom failed: RuntimeError: the disk caught fire"
    threaded = await session.call("SyncBoom", {})
    assert threaded.is_error and "ValueError: plain function failed in its thread" in text(threaded)
    left = await session.call("Leave", {})
    assert left.is_error and "SystemExit" in text(left)
    assert text(await session.call("Echo", {"text": "still here"})) == "still here"


async def test_hanging_tool_is_stopped_at_its_timeout(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    results = await session.call_batch([("Hang", {}), ("Echo", {"text": "next"})])
    assert results[0].is_error and "did not finish within 0.3 s and was stopped" in text(results[0])
    assert session.plugin_state("pipetest")["hang_cancelled"] is True
    assert text(results[1]) == "next"


@pytest.mark.slow
async def test_deadlines_of_many_calls(plugin_factory: PluginFactory) -> None:
    """One timer serves every call's deadline: an early deadline of a call
    that already ended must not cut another call short, and a later call with
    an earlier deadline than the running ones still gets it."""
    session = plugin_factory(PIPETEST).session("workspace")
    # Quick's 0.1 s deadline is the earliest seen when Sleep (600 s) runs past it.
    results = await session.call_batch([("Quick", {}), ("Sleep", {"label": "long", "seconds": 0.4})])
    assert [r.text_content() for r in results] == ["ok", "slept long"]
    # Hang (0.3 s) starts while Sleep (600 s default) holds the timer.
    results = await session.call_batch([("Sleep", {"label": "s2", "seconds": 0.6}), ("Hang", {})])
    assert results[0].text_content() == "slept s2"
    assert "did not finish within 0.3 s" in results[1].text_content()
    log = {e[0]: e for e in session.plugin_state("pipetest")["log"]}
    assert log["s2"][3] - log["s2"][2] >= 0.5  # Sleep was not cut short at Hang's 0.3 s deadline
    # Quick's stale 0.1 s timer fires first; Hang's later deadline must be re-armed from it.
    results = await session.call_batch([("Quick", {}), ("Hang", {})])
    assert "did not finish within 0.3 s" in results[1].text_content()


async def test_tool_that_ignores_cancellation_keeps_its_answer(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    result = await session.call("Swallow", {})
    assert result.text_content() == "swallowed" and not result.is_error
    # The task's cancel was taken back: the next await in this task is not cancelled.
    await asyncio.sleep(0.01)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_outer_cancellation_passes_through(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    call = asyncio.ensure_future(session.call("Slow", {"seconds": 30}))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # ... and the session goes on.
    assert (await session.call("Echo", {"text": "on"})).text_content() == "on"


async def test_tool_raising_its_own_timeout_error_is_not_reported_as_ours(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("OwnTimeout", {})
    assert result.is_error
    assert text(result) == "OwnTimeout failed: TimeoutError: connecting to the server timed out"


@pytest.mark.parametrize("kind, shown", [("int", "an int (42)"), ("dict", "a dict"), ("none", "nothing (None)")])
async def test_garbage_return_is_an_error_naming_the_plugin(plugin_factory: PluginFactory, kind: str,
                                                            shown: str) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Garbage", {"kind": kind})
    assert result.is_error
    assert f"Garbage returned {shown}" in text(result) and "bug in the plugin 'pipetest'" in text(result)


# --- large results, scratchpad ------------------------------------------------------------


async def test_large_result_spills_to_a_file_with_preview(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory, config="[results]\nmax_chars = 1000\n").session("workspace")
    small = await session.call("Huge", {"size": 1000})
    assert len(text(small)) == 1000  # at the limit: inline
    result = await session.call("Huge", {"size": 5000}, call_id="c/1")
    shown = text(result)
    assert shown.startswith("abcdefghij") and "Output was 5,000 characters, over the 1,000 limit" in shown
    path = Path(shown.split("saved in ")[1].split("; read it")[0])
    assert path.is_file() and path.name == "Huge-c_1.txt"
    assert path.read_text(encoding="utf-8") == "".join(chr(97 + i % 26) for i in range(5000))
    assert session.data_dir in path.parents and "pegboard" in str(path)
    assert len(shown) < 2_500
    assert result.structured_content is None  # as large as the text: dropped with it
    assert small.structured_content == {"text": text(small)}
    assert [p.name for p in path.parent.iterdir()] == ["Huge-c_1.txt"]  # no temporary file left behind
    # The saved output was for this session's model: closing the session deletes it, and only it.
    (session.data_dir / "keep.txt").write_text("checkpoints and the like")
    await session.aclose()
    assert not path.parent.exists() and (session.data_dir / "keep.txt").is_file()


async def test_the_scratchpad_has_a_limit_and_output_past_it_is_still_given(
        plugin_factory: PluginFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    import pegboard._engine.pipeline as pipeline

    monkeypatch.setattr(pipeline, "SCRATCHPAD_MAX_CHARS", 3_000)
    session = load(plugin_factory, config="[results]\nmax_chars = 1000\n").session("workspace")
    assert "Saved 2,000 characters" in text(await session.call("Huge", {"size": 2000, "scratchpad": "a"}))
    over = await session.call("Huge", {"size": 2000, "scratchpad": "b"})
    shown = text(over)
    assert "Not saved to scratchpad entry 'b'" in shown and "4,000 characters, over its 3,000 limit" in shown
    assert "The whole text is saved in" in shown  # longer than max_chars: spilled to a file, as without scratchpad
    assert not over.is_error and list(session.scratchpad) == ["a"]
    # replacing an entry counts only the new text
    assert "Saved 2,500 characters" in text(await session.call("Huge", {"size": 2500, "scratchpad": "a"}))
    assert len(session.scratchpad["a"]) == 2500
    await session.aclose()


async def test_default_limit_is_30000(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    assert len(text(await session.call("Huge", {"size": 30_000}))) == 30_000
    assert "over the 30,000 limit" in text(await session.call("Huge", {"size": 30_001}))


async def test_scratchpad_saves_instead_of_returning_and_lifts_caps(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    capped = await session.call("Big", {"size": 2000})
    assert len(text(capped)) == 500
    saved = await session.call("Big", {"size": 2000, "scratchpad": "letters"})
    assert text(saved) == ("Saved 2,000 characters of Big output to scratchpad entry 'letters'. "
                           "Read it with ScratchpadRead.")
    assert len(session.scratchpad["letters"]) == 2000  # uncapped because scratchpad was set
    # Huge does not lift caps, but a scratchpad entry is never spilled to a file.
    huge = await session.call("Huge", {"size": 40_000, "scratchpad": "huge"})
    assert len(session.scratchpad["huge"]) == 40_000
    assert huge.structured_content is None and len(text(huge)) < 200
    listing = await session.call("ScratchpadList", {})
    assert text(listing) == "huge\t40,000 characters\nletters\t2,000 characters"
    part = await session.call("ScratchpadRead", {"name": "letters", "offset": 26, "limit": 26})
    assert text(part).startswith("abcdefghijklmnopqrstuvwxyz\n[1,948 more characters; continue with offset=52]")
    past = await session.call("ScratchpadRead", {"name": "letters", "offset": 2000})
    assert past.is_error and text(past) == "offset 2,000 is past the end of 'letters' (2,000 characters)."
    missing = await session.call("ScratchpadRead", {"name": "nope"})
    assert missing.is_error and "Entries: huge, letters" in text(missing)
    again = await session.call("Echo", {"text": "x", "scratchpad": "letters"})
    assert "replacing the old entry" in text(again) and session.scratchpad["letters"] == "x"


async def test_scratchpad_keeps_errors_inline(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Boom", {"scratchpad": "pad"})
    assert result.is_error and "the disk caught fire" in text(result)
    assert "Nothing was saved to scratchpad entry 'pad'" in text(result)
    assert session.scratchpad == {}


# --- deferred tools -------------------------------------------------------------------


async def test_calling_unloaded_deferred_tool_works_and_notes_missing_params_once(
        plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    first = await session.call("Hidden", {"query": "q"})
    assert first.content[0].text == "hidden q 10"  # type: ignore[union-attr]
    note = first.content[-1].text  # type: ignore[union-attr]
    assert note.startswith("Note: Hidden was called without loading its schema")
    assert "- limit (integer, default 10): How many results." in note
    assert "- verbose (boolean, default false): Say more." in note
    assert "query" not in note.split("left out:")[1]
    second = await session.call("Hidden", {"query": "q"})
    assert "Note:" not in text(second)
    # Once per tool per session: a second session is told again.
    fresh = session.toolbox.session("workspace")
    assert "Note: Hidden" in text(await fresh.call("Hidden", {"query": "q"}))


async def test_loaded_deferred_tool_gets_no_note(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    await session.call("ToolSearch", {"query": "select:Hidden"})
    assert "Note" not in text(await session.call("Hidden", {"query": "q"}))


async def test_full_call_gets_no_note(plugin_factory: PluginFactory) -> None:
    session = load(plugin_factory).session("workspace")
    result = await session.call("Hidden", {"query": "q", "limit": 2, "verbose": True})
    assert text(result) == "hidden q 2"


# --- events from streaming tools -----------------------------------------------------


async def test_streaming_tool_notifications_reach_the_host(plugin_factory: PluginFactory) -> None:
    host = Events()
    session = load(plugin_factory, host=host).session("workspace")
    assert text(await session.call("Ticker", {}, call_id="t1")) == "ticked"
    lines = [(kind, data["line"], data["tool"], data["call_id"]) for _, kind, data in host.events]
    assert lines == [("monitor.line", f"tick {i}", "Ticker", "t1") for i in range(3)]
    assert session.notify_once("k", "told once") and not session.notify_once("k", "again")
    assert host.events[-1][1:] == ("note", {"key": "k", "text": "told once"})


async def test_extra_argument_of_a_strict_model_names_the_parameters(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST + '''
from pydantic import BaseModel, ConfigDict
from pegboard import Tool, hookimpl

class StrictIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    depth: int = 1

async def strict(args, ctx):
    return "ran"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Strict", handler=strict, input_model=StrictIn, read_only=True, permission="read"))
''', name="pipestrict").session("workspace")
    result = await session.call("Strict", {"path": "a", "dpeth": 2})
    assert result.is_error
    assert "- dpeth: not a parameter of Strict; it takes: path, depth" in result.text_content()


async def test_nested_and_union_errors_name_the_field_as_the_model_writes_it(
        plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST + '''
from pydantic import BaseModel, ConfigDict, Field
from pegboard import Tool, hookimpl

class Change(BaseModel):
    model_config = ConfigDict(extra="forbid")
    old: str = Field(description="Text to replace.")
    new: str = ""

class NestedIn(BaseModel):
    changes: list[Change]
    size: int | list[int] = 1
    tags: dict[str, int] = {}

async def nested(args, ctx):
    return "ran"

@hookimpl
def pegboard_register_tools(register):
    register(Tool(name="Nested", handler=nested, input_model=NestedIn, read_only=True, permission="read"))
''', name="pipenested").session("workspace")
    result = await session.call("Nested", {"changes": [{"old": "a"}, {"new": "b", "od": 1}],
                                           "size": "big", "tags": {"x": "one"}})
    lines = result.text_content().splitlines()
    assert lines[0] == "Invalid arguments for Nested; nothing was run:"
    assert "- changes[1].old: required but missing; expected string (Text to replace.)" in lines
    assert "- changes[1].od: not a parameter of Nested; it takes: see the schema" in lines
    size = next(line for line in lines if line.startswith("- size:"))
    assert "valid integer" in size and "valid list" in size and "expected integer or array of integer" in size
    assert '- tags["x"]: Input should be a valid integer, unable to parse string as an integer; ' \
           'expected integer (got "one")' in lines
    assert len(lines) == 5


async def test_refused_call_does_not_use_up_the_deferred_note(plugin_factory: PluginFactory) -> None:
    class Guard:
        @hookimpl
        def pegboard_before_call(self, call: Any) -> Any:
            from pegboard import PreCall

            return PreCall(block="not that query") if call.input.get("query") == "blocked" else None

    session = load(plugin_factory, host=Guard()).session("workspace")
    refused = await session.call("Hidden", {"query": "blocked"})
    assert refused.is_error and text(refused) == "not that query"
    assert "Note: Hidden was called without loading its schema" in text(await session.call("Hidden", {"query": "q"}))


def test_votes_see_a_plain_models_fields_as_model_dump_gives_them() -> None:
    """as_mapping copies the fields of a model of plain fields instead of
    calling model_dump: only where the two are the same."""
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, computed_field, field_serializer

    from pegboard._engine.arguments import _PLAIN_DUMP, as_mapping
    from pegboard.plugins.fs._models import EditInput, GlobInput, GrepInput, ReadInput

    class Inner(BaseModel):
        a: int = 1

    class Plain(BaseModel):
        path: str
        count: int | None = Field(default=None, ge=1)
        ratio: float = 0.5
        flag: bool = False

    class Aliased(BaseModel):
        before: int = Field(default=2, alias="-B")

    class DumpAliased(BaseModel):
        name: str = Field(default="x", serialization_alias="Name")

    class Nested(BaseModel):
        inner: Inner = Field(default_factory=Inner)

    class Listed(BaseModel):
        items: list[str] = Field(default_factory=lambda: ["a"])

    class Serialized(BaseModel):
        when: int = 3

        @field_serializer("when")
        def _show(self, value: int) -> str:
            return f"at {value}"

    class Computed(BaseModel):
        x: int = 1

        @computed_field  # type: ignore[prop-decorator]
        @property
        def double(self) -> int:
            return self.x * 2

    class Extra(BaseModel):
        model_config = ConfigDict(extra="allow")
        x: int = 1

    class Hidden(BaseModel):
        secret: str = Field(default="s", exclude=True)

    class Annotated_(BaseModel):
        n: Annotated[int, PlainSerializer(lambda v: v + 1)] = 1

    plain = [Plain(path="/a", count=2), Plain(path="b"), ReadInput(file_path="/x", offset=3),
             EditInput(file_path="/x", old_string="a", new_string="b"), GlobInput(pattern="*.py")]
    others = [Aliased(), DumpAliased(), Nested(), Listed(), Serialized(), Computed(), Extra(x=1, y=2), Hidden(),
              Annotated_(), GrepInput(pattern="x", **{"-B": 1})]
    for model in plain + others:
        assert as_mapping(model) == model.model_dump(by_alias=True), type(model).__name__
    assert all(_PLAIN_DUMP[type(m)] for m in plain)
    assert not any(_PLAIN_DUMP[type(m)] for m in others)


def _owned_by_schema(tool: Any) -> tuple[bool, bool]:
    own = tool.schema.get("properties", {})
    return "background" not in own, "scratchpad" not in own


def test_reserved_parameters_are_found_without_the_schema_as_with_it() -> None:
    """``reserved_owned`` answers from a plain model's fields without building
    its JSON Schema; for every installed tool, and for models whose schema
    names differ from their fields, the answer is the schema's."""
    from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel
    from pydantic.json_schema import SkipJsonSchema

    from pegboard import Tool
    from pegboard._engine.arguments import _plainly_without_reserved, reserved_owned

    class Plain(BaseModel):
        path: str
        limit: int = 0

    class Named(BaseModel):
        background: bool = False

    class Aliased(BaseModel):
        run_later: bool = Field(False, alias="background")

    class Choices(BaseModel):
        keep: str | None = Field(None, validation_alias=AliasChoices("scratchpad", "keep"))

    class Generated(BaseModel):
        model_config = ConfigDict(alias_generator=lambda name: "scratchpad" if name == "pad" else name)
        pad: str | None = None

    class Extra(BaseModel):
        model_config = ConfigDict(json_schema_extra={"properties": {"background": {"type": "boolean"}}})
        path: str = ""

    class Skipped(BaseModel):
        background: SkipJsonSchema[bool] = False

    class Rooted(RootModel[Named]):
        pass

    async def handler(args: Any, ctx: Any) -> str:
        return ""

    made = [Tool(name=f"T{i}", handler=handler, input_model=model)
            for i, model in enumerate((Plain, Named, Aliased, Choices, Generated, Extra, Skipped, Rooted))]
    toolbox = Toolbox.load(cwd=Path.cwd(), inventory=True)
    installed = [status.tool for status in toolbox.tool_statuses()]
    assert len(installed) > 20
    for tool in [*made, *installed]:
        assert reserved_owned(tool) == _owned_by_schema(tool), tool.name
    assert _plainly_without_reserved(made[0]) and not any(_plainly_without_reserved(t) for t in made[1:])
    assert sum(map(_plainly_without_reserved, installed)) > 10  # the shortcut is taken for most


def test_validation_calls_a_models_own_model_validate_and_follows_a_rebuild() -> None:
    """The pipeline calls pydantic's validator directly only for a model that
    keeps pydantic's model_validate; one of its own is called. A model
    rebuilt after its first call is validated by its new validator."""
    from pydantic import BaseModel, ConfigDict

    from pegboard import Tool
    from pegboard._engine.arguments import validate

    class Own(BaseModel):
        text: str

        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
            return super().model_validate({"text": obj["text"].upper()}, **kwargs)

    class Later(BaseModel):
        model_config = ConfigDict(defer_build=True)
        text: str

    async def handler(args: Any, ctx: Any) -> str:
        return "ok"

    own = Tool(name="Own", handler=handler, input_model=Own)
    assert validate(own, {"text": "hi"})[0].text == "HI"
    later = Tool(name="Later", handler=handler, input_model=Later)
    assert validate(later, {"text": "a"})[0].text == "a"  # built at its first validation
    before = Later.__pydantic_validator__
    Later.model_rebuild(force=True)
    assert Later.__pydantic_validator__ is not before
    calls = []
    rebuilt = Later.__pydantic_validator__

    class Spy:
        def validate_python(self, value: Any) -> Any:
            calls.append(value)
            return rebuilt.validate_python(value)

    Later.__pydantic_validator__ = Spy()  # type: ignore[assignment]
    try:
        assert validate(later, {"text": "b"})[0].text == "b"
    finally:
        Later.__pydantic_validator__ = rebuilt
    assert calls == [{"text": "b"}]

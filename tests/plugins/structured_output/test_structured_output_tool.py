"""StructuredOutput: offered only with an answer schema, which is its input
schema; a wrong answer is refused with the errors, a right one reaches the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from pegboard import Toolbox
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
    },
    "required": ["verdict", "score"],
    "additionalProperties": False,
}


def load(root: Path, host: ScriptedHost | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["structured_output"], host=host)


async def test_a_wrong_answer_is_refused_with_its_errors_and_a_right_one_reaches_the_host(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = load(tmp_path, host).session("default", output_schema=SCHEMA)
    [entry] = [t for t in session.catalogue().to_anthropic() if t["name"] == "StructuredOutput"]
    assert entry["input_schema"]["properties"]["verdict"] == SCHEMA["properties"]["verdict"]
    assert entry["input_schema"]["required"] == ["verdict", "score"]

    wrong = await session.call("StructuredOutput", {"verdict": "maybe", "score": 11})
    assert wrong.is_error
    text = wrong.text_content()
    assert "verdict: 'maybe' is not one of ['pass', 'fail']" in text
    assert "score: 11 is greater than the maximum of 10" in text
    assert session.structured_output is None and not host.events_of("structured_output")

    missing = await session.call("StructuredOutput", {"verdict": "pass"})
    assert missing.is_error and "'score' is a required property" in missing.text_content()

    right = await session.call("StructuredOutput", {"verdict": "pass", "score": 7})
    assert not right.is_error, right.text_content()
    assert right.structured_content == {"verdict": "pass", "score": 7}
    assert session.structured_output == {"verdict": "pass", "score": 7}
    assert [e["output"] for e in host.events_of("structured_output")] == [{"verdict": "pass", "score": 7}]


async def test_absent_without_an_answer_schema(tmp_path: Path) -> None:
    toolbox = load(tmp_path)
    assert "StructuredOutput" in toolbox.tools  # registered: listings show it
    plain = toolbox.session("default")
    assert "StructuredOutput" not in plain.catalogue().names()
    refused = await plain.call("StructuredOutput", {"verdict": "pass", "score": 1})
    assert refused.is_error and "not offered in this session" in refused.text_content()
    assert (await plain.decide("StructuredOutput", {})).decision == "deny"
    # another session of the same toolbox, with a schema, has it
    assert "StructuredOutput" in toolbox.session("default", output_schema=SCHEMA).catalogue().names()


async def test_each_session_shows_its_own_schema(tmp_path: Path) -> None:
    toolbox = load(tmp_path)
    other = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    first = toolbox.session("default", output_schema=SCHEMA).catalogue()
    second = toolbox.session("default", output_schema=other).catalogue()
    schemas = {c.version: c.tools[0].input_schema for c in (first, second)}
    assert len(schemas) == 2
    assert second.tools[0].input_schema["required"] == ["title"]


@pytest.mark.parametrize("schema, why", [
    ({"type": "array"}, "must describe an object"),
    ({"type": "object", "properties": {"x": {"type": "nonsense"}}}, "not a valid JSON Schema"),
    ([1, 2], "must be a JSON Schema (a dict)"),
])
def test_a_schema_that_is_not_an_objects_is_refused(tmp_path: Path, schema: object, why: str) -> None:
    with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
        load(tmp_path).session("default", output_schema=schema)  # type: ignore[arg-type]

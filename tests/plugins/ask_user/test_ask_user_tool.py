"""AskUserQuestion: answered through the host's pegboard_ask_user, else a
form through pegboard_elicit (single and multi-select, "Other" with text),
at a terminal for `pegboard call`, and not offered where nobody answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _terminal import converse

from pegboard import Toolbox, hookimpl
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio

LIBRARY = {"question": "Which HTTP library should the client use?", "header": "Library", "multiSelect": False,
           "options": [{"label": "httpx (Recommended)", "description": "async and sync, HTTP/2"},
                       {"label": "requests", "description": "sync only", "preview": "requests.get(url)"}]}
CHECKS = {"question": "Which checks should run in CI?", "header": "CI checks", "multiSelect": True,
          "options": [{"label": "mypy", "description": "types"}, {"label": "ruff", "description": "lint"},
                      {"label": "pytest", "description": "tests"}]}


def load(root: Path, host: object | None = None) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["ask_user"], host=host)


class Answering:
    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.heard: list[list[dict[str, Any]]] = []

    @hookimpl
    async def pegboard_ask_user(self, session: Any, questions: list[dict[str, Any]]) -> Any:
        self.heard.append(questions)
        return self.reply


async def test_the_hosts_hook_answers(tmp_path: Path) -> None:
    host = Answering({"answers": {LIBRARY["question"]: "requests"},
                      "annotations": {LIBRARY["question"]: {"notes": "we already depend on it"}}})
    session = load(tmp_path, host).session("default")
    assert "AskUserQuestion" in session.catalogue().names()
    result = await session.call("AskUserQuestion", {"questions": [LIBRARY], "metadata": {"source": "test"}})
    assert not result.is_error, result.text_content()
    assert f'"{LIBRARY["question"]}" = "requests"' in result.text_content()
    assert "we already depend on it" in result.text_content()
    assert result.structured_content["answers"] == {LIBRARY["question"]: "requests"}
    assert result.structured_content["metadata"] == {"source": "test"}
    assert host.heard[0][0]["options"][1]["preview"] == "requests.get(url)"


async def test_a_form_single_and_multi_select_and_other_with_text(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = load(tmp_path, host).session("default")
    host.forms.append({"q1": "httpx (Recommended)", "q2_1": True, "q2_2": False, "q2_3": True})
    result = await session.call("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
    assert result.structured_content["answers"] == {LIBRARY["question"]: "httpx (Recommended)",
                                                    CHECKS["question"]: "mypy, pytest"}
    source, message, schema = host.elicited[0]
    assert source == "AskUserQuestion" and "requests: sync only" in message and "| requests.get(url)" in message
    assert schema["properties"]["q1"]["enum"] == ["httpx (Recommended)", "requests", "Other"]
    assert schema["properties"]["q2_3"]["type"] == "boolean"

    host.forms.append({"q1": "Other", "q1_other": "aiohttp, we use it elsewhere", "q2_1": False,
                       "q2_other": "bandit"})
    other = await session.call("AskUserQuestion", {"questions": [LIBRARY, CHECKS]})
    assert other.structured_content["answers"] == {LIBRARY["question"]: "aiohttp, we use it elsewhere",
                                                   CHECKS["question"]: "bandit"}

    declined = await session.call("AskUserQuestion", {"questions": [LIBRARY]})  # no form scripted: declined
    assert not declined.is_error and "did not answer" in declined.text_content()


async def test_answers_the_front_end_filled_in_need_no_asking(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = load(tmp_path, host).session("default")
    result = await session.call("AskUserQuestion", {"questions": [LIBRARY],
                                                    "answers": {LIBRARY["question"]: "requests"}})
    assert result.structured_content["answers"] == {LIBRARY["question"]: "requests"} and host.elicited == []


async def test_not_offered_where_nobody_can_answer(tmp_path: Path) -> None:
    alone = load(tmp_path).session("default")
    assert "AskUserQuestion" not in alone.catalogue().names()
    refused = await alone.call("AskUserQuestion", {"questions": [LIBRARY]})
    assert refused.is_error and "not offered in this session" in refused.text_content()
    assert "AskUserQuestion" in load(tmp_path).tools  # listed all the same
    hosted = load(tmp_path, ScriptedHost()).session("default")
    hosted.can_ask = False  # a host that knows this session's person cannot answer
    assert "AskUserQuestion" not in hosted.catalogue().names()


@pytest.mark.parametrize("change, why", [
    ({"header": "Thirteen char"}, "at most 12 characters"),
    ({"options": LIBRARY["options"][:1]}, "at least 2 items"),
    ({"options": LIBRARY["options"] + [{"label": "Other", "description": "x"}]}, "is added to every question"),
    ({"options": [LIBRARY["options"][0]] * 2}, "different labels"),
])
async def test_questions_out_of_shape_are_refused(tmp_path: Path, change: dict[str, Any], why: str) -> None:
    session = load(tmp_path, ScriptedHost()).session("default")
    result = await session.call("AskUserQuestion", {"questions": [{**LIBRARY, **change}]})
    assert result.is_error and why in result.text_content(), result.text_content()


async def test_at_most_four_questions(tmp_path: Path) -> None:
    session = load(tmp_path, ScriptedHost()).session("default")
    many = [{**LIBRARY, "question": f"Question {n}?"} for n in range(5)]
    result = await session.call("AskUserQuestion", {"questions": many})
    assert result.is_error and "at most 4 items" in result.text_content()


def test_the_schema_is_as_models_know_it(tmp_path: Path) -> None:
    schema = load(tmp_path).tools["AskUserQuestion"].schema
    assert set(schema["properties"]) == {"questions", "answers", "annotations", "metadata"}
    assert schema["required"] == ["questions"]
    assert "$defs" not in schema  # nested objects spelled out, as models know them
    question = schema["properties"]["questions"]["items"]
    assert sorted(question["required"]) == ["header", "multiSelect", "options", "question"]
    assert sorted(question["properties"]["options"]["items"]["required"]) == ["description", "label"]
    assert question["properties"]["header"]["maxLength"] == 12


@pytest.mark.slow
def test_pegboard_call_at_a_terminal_asks_there(tmp_path: Path) -> None:
    payload = json.dumps({"questions": [LIBRARY]})
    code, shown = converse(["call", "AskUserQuestion", "--input", payload, "--json", "--cwd", str(tmp_path)],
                           {b"Answer it?": b"y\r", b"Library (": b"requests\r", b"Library: other": b"\r"},
                           env={"PEGBOARD_PLUGINS": "ask_user"})
    assert code == 0, shown
    assert '\\"Which HTTP library should the client use?\\" = \\"requests\\"' in shown or \
        '"Which HTTP library should the client use?" = "requests"' in shown, shown

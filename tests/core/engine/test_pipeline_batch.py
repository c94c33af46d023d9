"""Batches: read-only calls side by side (at most ten at once, more for tools
that proved cheap), every other call alone and in order, results in call order. Judged from the start/end
timestamps the tools record themselves, never from absolute speed."""

from __future__ import annotations

from typing import Any

import pytest

from _plugin_factory import PIPETEST, PluginFactory, plugin_factory  # noqa: F401
from pegboard import Session

pytestmark = pytest.mark.anyio

Interval = tuple[str, str, float, float]


def log(session: Session) -> dict[str, Interval]:
    return {entry[0]: entry for entry in session.plugin_state("pipetest").get("log", [])}


def overlap(a: Interval, b: Interval) -> bool:
    return a[2] < b[3] and b[2] < a[3]


def peak(intervals: list[Interval]) -> int:
    """The most intervals open at one instant."""
    edges = sorted([(i[2], 1) for i in intervals] + [(i[3], -1) for i in intervals])
    open_now = best = 0
    for _, step in edges:
        open_now += step
        best = max(best, open_now)
    return best


def sleep(label: str, seconds: float = 0.2) -> tuple[str, dict[str, Any]]:
    return ("Sleep", {"label": label, "seconds": seconds})


async def test_ten_reads_run_side_by_side(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    results = await session.call_batch([sleep(f"r{i}") for i in range(10)])
    assert [r.text_content() for r in results] == [f"slept r{i}" for i in range(10)]
    spans = list(log(session).values())
    assert len(spans) == 10
    # Every pair overlaps: the last to start started before the first to end ended.
    assert max(s[2] for s in spans) < min(s[3] for s in spans)


@pytest.mark.slow
async def test_at_most_ten_at_once_and_a_slow_read_holds_up_no_one(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    calls = [sleep("slow", 0.8)] + [sleep(f"r{i}", 0.1) for i in range(1, 14)]
    results = await session.call_batch(calls)
    assert [r.text_content() for r in results] == ["slept slow"] + [f"slept r{i}" for i in range(1, 14)]
    spans = log(session)
    assert peak(list(spans.values())) == 10
    # r10..r13 had to wait for a slot, but for a fast call's slot, not the slow one's.
    for i in range(10, 14):
        assert spans[f"r{i}"][2] < spans["slow"][3], f"r{i} waited for the slow read"
        assert overlap(spans[f"r{i}"], spans["slow"])


async def test_cheap_calls_run_more_than_ten_at_once(plugin_factory: PluginFactory,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from pegboard._engine import pipeline as _pipeline

    # What counts as cheap is a duration; a generous bound keeps this test
    # about the rule, not about how busy the machine is.
    monkeypatch.setattr(_pipeline, "CHEAP_S", 30.0)
    session = plugin_factory(PIPETEST).session("workspace")
    await session.call_batch([sleep(f"warm{i}", 0.01) for i in range(3)])
    results = await session.call_batch([sleep(f"r{i}", 0.2) for i in range(40)])
    assert [r.text_content() for r in results] == [f"slept r{i}" for i in range(40)]
    spans = [span for label, span in log(session).items() if label.startswith("r")]
    assert peak(spans) == _pipeline.MAX_PARALLEL_CHEAP


@pytest.mark.slow
async def test_a_slow_call_puts_its_tool_back_under_the_limit_of_ten(plugin_factory: PluginFactory,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from pegboard._engine import pipeline as _pipeline

    monkeypatch.setattr(_pipeline, "CHEAP_S", 0.05)
    session = plugin_factory(PIPETEST).session("workspace")
    await session.call_batch([sleep(f"warm{i}", 0.0) for i in range(3)])
    await session.call_batch([sleep("slow", 0.3)])  # this tool is not cheap after all
    await session.call_batch([sleep(f"r{i}", 0.2) for i in range(20)])
    assert peak([span for label, span in log(session).items() if label.startswith("r")]) == 10
    # A group is cheap only when all its tools are: one unproven tool keeps it at ten.
    await session.call_batch([sleep(f"again{i}", 0.0) for i in range(3)])
    calls = [sleep(f"m{i}", 0.2) for i in range(20)] + [("Echo", {"text": "unproven"})]
    await session.call_batch(calls)
    assert peak([span for label, span in log(session).items() if label.startswith("m")]) == 10


@pytest.mark.slow
async def test_writes_run_alone_and_in_order(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("ReadFile", {"label": "before", "path": "a.txt"}),
        sleep("r1", 0.4),
        sleep("r2", 0.1),
        ("WriteFile", {"label": "w1", "path": "a.txt", "text": "one", "seconds": 0.15}),
        ("ReadFile", {"label": "after", "path": "a.txt"}),
        sleep("r3", 0.2),
        ("WriteFile", {"label": "w2", "path": "a.txt", "text": "two", "seconds": 0.15}),
        ("WriteFile", {"label": "w3", "path": "b.txt", "text": "three", "seconds": 0.15}),
        ("ReadFile", {"label": "last", "path": "a.txt"}),
    ]
    results = await session.call_batch(calls)
    texts = [r.text_content() for r in results]
    # Results in call order, and each read saw exactly the writes before it (real files).
    assert texts[0] == "<missing>" and texts[4] == "one" and texts[8] == "two"
    assert texts[3] == "wrote 3 characters to a.txt" and texts[7] == "wrote 5 characters to b.txt"
    assert (session.root / "a.txt").read_text() == "two" and (session.root / "b.txt").read_text() == "three"
    spans = log(session)
    writes = [spans[w] for w in ("w1", "w2", "w3")]
    for w in writes:
        for other in spans.values():
            assert other is w or not overlap(w, other), f"{w[0]} overlapped {other[0]}"
    # The first group ran side by side; w1 waited for all of it, the slow r1 included.
    assert overlap(spans["r1"], spans["r2"]) and overlap(spans["r1"], spans["before"])
    assert spans["w1"][2] >= spans["r1"][3]
    # Reads after a write wait for it (and so, through it, for the slow r1 too).
    assert spans["after"][2] >= spans["w1"][3] and spans["r3"][2] >= spans["w1"][3]
    assert overlap(spans["after"], spans["r3"])
    assert spans["w2"][2] >= spans["r3"][3] and spans["w3"][2] >= spans["w2"][3]
    assert spans["last"][2] >= spans["w3"][3]


async def test_failures_in_a_batch_stay_with_their_call(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    results = await session.call_batch([
        sleep("a", 0.1),
        ("Boom", {}),
        ("Hang", {}),
        ("Echo", {"count": "x"}),
        ("NoSuchTool", {}),
        ("Garbage", {}),
        sleep("b", 0.1),
        ("WriteFile", {"label": "w", "path": "forbidden.txt"}),
        ("Echo", {"text": "end"}),
    ])
    assert [r.is_error for r in results] == [False, True, True, True, True, True, False, True, False]
    assert "RuntimeError" in results[1].text_content()
    assert "did not finish within" in results[2].text_content()
    assert "Invalid arguments for Echo" in results[3].text_content()
    assert "no tool called 'NoSuchTool'" in results[4].text_content()
    assert "Permission denied for WriteFile" in results[7].text_content()
    assert results[8].text_content() == "end"
    spans = log(session)
    assert overlap(spans["a"], spans["b"])  # one group, despite the failures between them


async def test_call_ids_are_passed_through(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST, config="[results]\nmax_chars = 1000\n").session("workspace")
    results = await session.call_batch([("Huge", {"size": 2000}, "toolu_01")])
    assert "Huge-toolu_01.txt" in results[0].text_content()


async def test_scratchpad_read_after_a_save_in_the_same_reply_sees_it(plugin_factory: PluginFactory) -> None:
    session = plugin_factory(PIPETEST).session("workspace")
    results = await session.call_batch([
        ("ScratchpadList", {}),                                  # before the save: sees nothing
        ("Slow", {"seconds": 0.2, "label": "s", "scratchpad": "pad"}),
        sleep("r1", 0.2),
        ("ScratchpadRead", {"name": "pad"}),                     # after the save: waits for it
        sleep("r2", 0.2),
        ("ScratchpadList", {}),
    ])
    texts = [r.text_content() for r in results]
    assert texts[0] == "The scratchpad is empty."
    assert texts[3] == "slow s done" and texts[5] == "pad\t11 characters"
    spans = log(session)
    assert overlap(spans["s"], spans["r1"])  # the save still ran beside the reads of its group
    assert spans["r2"][2] >= spans["r1"][3]  # a new group started at the reader


async def test_a_person_is_asked_one_call_at_a_time(plugin_factory: PluginFactory) -> None:
    import asyncio
    import time

    from pegboard import Answer, hookimpl

    class Person:
        def __init__(self) -> None:
            self.asked: list[tuple[str, float, float]] = []

        @hookimpl
        async def pegboard_ask(self, request: Any, decision: Any) -> Answer:
            start = time.monotonic()
            await asyncio.sleep(0.1)  # reading the question
            self.asked.append((request.input["label"], start, time.monotonic()))
            if request.input["label"] == "ask-no":
                return Answer(allow=False, message="not that one")
            return Answer(allow=True, remember="session", rule="Sleep")

    person = Person()
    session = plugin_factory(PIPETEST, host=person).session("default")
    results = await session.call_batch([sleep("ask-no", 0.1), sleep("ask-1", 0.2), sleep("ask-2", 0.2),
                                        sleep("ask-3", 0.2), sleep("plain", 0.2)])
    assert results[0].is_error and "not that one" in results[0].text_content()
    assert [r.text_content() for r in results[1:]] == ["slept ask-1", "slept ask-2", "slept ask-3", "slept plain"]
    # Questions came one at a time, in call order; "always allow" answered the rest.
    assert [a[0] for a in person.asked] == ["ask-no", "ask-1"]
    assert person.asked[1][1] >= person.asked[0][2]
    spans = log(session)
    assert overlap(spans["ask-1"], spans["ask-2"]) and overlap(spans["ask-2"], spans["ask-3"])

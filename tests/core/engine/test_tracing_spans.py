"""OpenTelemetry spans of tool calls and permission decisions, checked with
the SDK's in-memory exporter: names and attributes after the GenAI semantic
conventions, the decision, the approval wait, the run, the result's size and
the error; nested under the current span (a framework's). Off, and nothing
imported, when no SDK is configured."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from pegboard import Answer, Toolbox, hookimpl  # noqa: E402
from pegboard._engine import tracing as _tracing  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    """A provider of the test's own, as if the host had configured the SDK
    (the process-wide provider can be set only once, so it is not used)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracing._found[0] = provider.get_tracer("pegboard")
    yield exporter, provider
    _tracing._reset()


def by_name(finished: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in finished}


class Later:
    @hookimpl
    def pegboard_ask(self, request: object, decision: object) -> Answer:
        return Answer.later()


async def test_a_call_s_spans_and_their_attributes(tmp_path: Path, spans: Any) -> None:
    exporter, _ = spans
    (tmp_path / "a.txt").write_text("alpha\n")
    session = Toolbox.load(cwd=tmp_path, plugins=["fs"]).session("default")
    await session.call("Read", {"file_path": str(tmp_path / "a.txt")}, call_id="toolu_1")
    found = by_name(exporter.get_finished_spans())
    call, decision, run = found["execute_tool Read"], found["permission Read"], found["run Read"]
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool" and attributes["gen_ai.tool.name"] == "Read"
    assert attributes["gen_ai.tool.call.id"] == "toolu_1" and attributes["pegboard.permission.decision"] == "allow"
    assert attributes["pegboard.result.is_error"] is False and attributes["pegboard.result.chars"] > 0
    assert "error.type" not in attributes and call.status.status_code == StatusCode.UNSET
    assert decision.parent is not None and decision.parent.span_id == call.context.span_id
    assert run.parent is not None and run.parent.span_id == call.context.span_id
    assert dict(decision.attributes or {})["pegboard.permission.source"] == "plugin fs"


async def test_errors_denials_pending_calls_and_timeouts(tmp_path: Path, spans: Any) -> None:
    exporter, _ = spans
    session = Toolbox.load(cwd=tmp_path, plugins=["fs"]).session("default")
    await session.call("Read", {"file_path": str(tmp_path / "missing.txt")}, call_id="e1")
    await session.call("Write", {"file_path": str(tmp_path / "x.txt"), "content": "x"}, call_id="d1")  # nobody to ask
    asking = Toolbox.load(cwd=tmp_path, plugins=["fs"], host=Later()).session("default")
    await asking.call("Write", {"file_path": str(tmp_path / "y.txt"), "content": "y"}, call_id="p1")
    calls = {dict(s.attributes or {}).get("gen_ai.tool.call.id"): s for s in exporter.get_finished_spans()
             if s.name.startswith("execute_tool ")}
    kinds = {call_id: (dict(s.attributes or {}).get("error.type"), s.status.status_code)
             for call_id, s in calls.items()}
    assert kinds == {"e1": ("tool_error", StatusCode.ERROR), "d1": ("denied", StatusCode.ERROR),
                     "p1": ("pending", StatusCode.ERROR)}
    approval = [s for s in exporter.get_finished_spans() if s.name == "approval Write"]
    assert len(approval) == 1 and dict(approval[0].attributes or {})["pegboard.approval.answer"] == "later"


async def test_a_timeout_is_said(tmp_path: Path, spans: Any) -> None:
    exporter, _ = spans
    session = Toolbox.load(cwd=tmp_path, plugins=["shell"]).session("bypassPermissions")
    await session.call("Bash", {"command": "sleep 20"}, timeout_s=0.2)
    [call] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool Bash"]
    assert dict(call.attributes or {})["error.type"] == "timeout"
    await session.aclose()


async def test_a_decision_alone_has_its_span(tmp_path: Path, spans: Any) -> None:
    exporter, _ = spans
    session = Toolbox.load(cwd=tmp_path, plugins=["fs"]).session("default")
    await session.decide("Write", {"file_path": str(tmp_path / "x.txt"), "content": "x"})
    [decision] = exporter.get_finished_spans()
    assert decision.name == "permission Write"
    assert dict(decision.attributes or {})["pegboard.permission.decision"] == "ask"


async def test_spans_nest_under_the_current_span(tmp_path: Path, spans: Any) -> None:
    exporter, provider = spans
    session = Toolbox.load(cwd=tmp_path, plugins=["fs"]).session("default")
    with provider.get_tracer("framework").start_as_current_span("agent step") as outer:
        await session.call("Glob", {"pattern": "*"})
    [call] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool Glob"]
    assert call.parent is not None and call.parent.span_id == outer.get_span_context().span_id


@pytest.mark.slow
def test_off_without_an_sdk_and_nothing_imported(tmp_path: Path) -> None:
    probe = ("import asyncio, sys\nfrom pegboard import Toolbox\n"
             f"s = Toolbox.load(cwd={str(tmp_path)!r}, plugins=['fs']).session('default')\n"
             "asyncio.run(s.call('Glob', {'pattern': '*'}))\n"
             "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_on_once_the_host_configures_the_sdk(tmp_path: Path) -> None:
    probe = ("import asyncio\n"
             "from opentelemetry import trace\n"
             "from opentelemetry.sdk.trace import TracerProvider\n"
             "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
             "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
             "from pegboard import Toolbox\n"
             f"s = Toolbox.load(cwd={str(tmp_path)!r}, plugins=['fs']).session('default')\n"
             "asyncio.run(s.call('Glob', {'pattern': '*'}))  # before: no SDK, no spans\n"
             "exporter = InMemorySpanExporter()\n"
             "provider = TracerProvider()\n"
             "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
             "trace.set_tracer_provider(provider)\n"
             "asyncio.run(s.call('Glob', {'pattern': '*'}))\n"
             "print(sorted(x.name for x in exporter.get_finished_spans()))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['execute_tool Glob', 'permission Glob', 'run Glob']"

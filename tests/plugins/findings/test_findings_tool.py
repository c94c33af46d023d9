"""ReportFindings: validated, at most 32, handed to the host as a typed list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pegboard import Toolbox
from pegboard.testing import ScriptedHost

pytestmark = pytest.mark.anyio


def finding(n: int, **extra: Any) -> dict[str, Any]:
    return {"file": f"src/m{n}.py", "summary": f"problem {n}", "failure_scenario": f"input {n} crashes it", **extra}


def load(root: Path, host: ScriptedHost) -> Toolbox:
    return Toolbox.load(cwd=root, plugins=["findings"], host=host)


async def test_findings_reach_the_host_as_an_event_and_structured_content(tmp_path: Path) -> None:
    from pegboard.plugins.findings import Finding

    host = ScriptedHost()
    session = load(tmp_path, host).session("default")
    given = [finding(1, line=12, category="bug", verdict="confirmed", short_summary="crash", outcome="fix"),
             finding(2)]
    result = await session.call("ReportFindings", {"findings": given, "level": "thorough"})
    assert not result.is_error, result.text_content()
    assert "Reported 2 findings" in result.text_content()
    assert result.structured_content == {"findings": given, "level": "thorough"}
    [event] = host.events_of("findings")
    assert event["findings"] == given and event["level"] == "thorough"
    typed = [Finding.model_validate(f) for f in event["findings"]]
    assert typed[0].line == 12 and typed[1].line is None
    assert host.asks == []  # allowed, nobody asked


async def test_33_findings_are_refused(tmp_path: Path) -> None:
    host = ScriptedHost()
    session = load(tmp_path, host).session("default")
    result = await session.call("ReportFindings", {"findings": [finding(n) for n in range(33)]})
    assert result.is_error
    assert "at most 32" in result.text_content()
    assert host.events_of("findings") == []
    ok = await session.call("ReportFindings", {"findings": [finding(n) for n in range(32)]})
    assert not ok.is_error and len(ok.structured_content["findings"]) == 32


async def test_a_finding_without_its_failure_scenario_is_refused(tmp_path: Path) -> None:
    session = load(tmp_path, ScriptedHost()).session("default")
    result = await session.call("ReportFindings", {"findings": [{"file": "a.py", "summary": "x"}]})
    assert result.is_error and "failure_scenario" in result.text_content()


def test_the_schema_is_as_models_know_it(tmp_path: Path) -> None:
    tool = load(tmp_path, ScriptedHost()).tools["ReportFindings"]
    assert tool.read_only and tool.loading == "always"
    schema = tool.schema
    assert schema["required"] == ["findings"] and set(schema["properties"]) == {"findings", "level"}
    assert "$defs" not in schema  # nested objects spelled out (strict-mode checkers refuse a bare $ref)
    item = schema["properties"]["findings"]["items"]
    assert sorted(item["required"]) == ["failure_scenario", "file", "summary"]
    assert set(item["properties"]) == {"file", "summary", "failure_scenario", "line", "short_summary", "category",
                                       "verdict", "outcome"}

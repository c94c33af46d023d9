"""examples/embed_batch.py runs as a program: with the fs plugin, and with the
core's tools only (fs switched off in the user's config)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed_batch.py"


def run_example() -> tuple[str, dict[str, Any]]:
    # The isolated XDG_* and PEGBOARD_POLICY of conftest are in os.environ.
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ), cwd=EXAMPLE.parent)
    assert done.returncode == 0, done.stderr
    head, _, body = done.stdout.partition("\n{\n")
    return head, json.loads("{\n" + body)


def results_by_id(message: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    assert message["role"] == "user"
    out = {}
    for block in message["content"]:
        assert block["type"] == "tool_result"
        out[block["tool_use_id"]] = (block["is_error"], "\n".join(c["text"] for c in block["content"]))
    return out


@pytest.mark.slow
def test_example_with_fs() -> None:
    pytest.importorskip("pegboard.plugins.fs._read")
    head, message = run_example()
    assert "Read" in head.splitlines()[0] and "ScratchpadRead" in head.splitlines()[0]
    results = results_by_id(message)
    assert list(results) == [f"toolu_0{i}" for i in range(1, 10)]  # in call order
    assert results["toolu_01"] == (False, results["toolu_04"][1])  # the scratchpad held what Read returned
    assert "The build uses make." in results["toolu_01"][1]
    assert results["toolu_02"][0] is False and "guide.md" in results["toolu_02"][1]
    assert results["toolu_03"][1].startswith("Saved ") and "scratchpad entry 'notes'" in results["toolu_03"][1]
    assert results["toolu_05"][0] is True and "Permission denied for Write" in results["toolu_05"][1]
    assert results["toolu_06"][0] is False and results["toolu_06"][1].startswith("notes\t")
    assert results["toolu_08"][0] and "- name:" in results["toolu_08"][1]
    assert results["toolu_09"] == (True, "There is no tool called 'Raed'. Did you mean Read?")


@pytest.mark.slow
def test_example_with_core_tools_only(isolated_env: Path) -> None:
    config = isolated_env / "config" / "pegboard" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[plugins.fs]\nenabled = false\n", encoding="utf-8")
    head, message = run_example()
    assert head.splitlines()[0] == ("catalogue: 5 tools with schemas: ScratchpadRead, ScratchpadList, TaskList, "
                                    "TaskOutput, TaskStop")
    results = results_by_id(message)
    assert list(results) == ["toolu_06", "toolu_07", "toolu_08", "toolu_09"]
    assert results["toolu_06"] == (False, "The scratchpad is empty.")
    assert results["toolu_07"] == (False, "No background tasks in this session.")
    assert results["toolu_08"][0] and results["toolu_09"][0]

"""Every Python example in docs/pipeline.md runs as written, in a fresh process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "pipeline.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) >= 9


@pytest.mark.slow
@pytest.mark.parametrize("source", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(source: str, tmp_path: Path) -> None:
    # conftest's isolated XDG_* and PEGBOARD_POLICY are in os.environ.
    # TMPDIR: the examples make their projects with tempfile.mkdtemp, which nothing removes.
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "every example prints something"

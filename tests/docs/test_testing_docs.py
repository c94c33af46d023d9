"""docs/testing.md's test module runs as written, in a pytest run of its own
(only pegboard.testing's fixtures: none of pegboard's conftest)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
import pytest

PAGE = Path(__file__).parents[2] / "docs" / "testing.md"


@pytest.mark.slow
def test_the_page_s_test_module_passes(tmp_path: Path) -> None:
    found = re.search(r'^```python title="tests/test_greet.py"\n(.*?)^```$', PAGE.read_text(), re.M | re.S)
    assert found
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_greet.py").write_text(found.group(1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


def test_every_fixture_is_in_the_table() -> None:
    import pegboard.testing

    table = PAGE.read_text().split("## The fixtures", 1)[1].split("\n## ", 1)[0]
    fixtures = [name for name in pegboard.testing.__all__ if name.startswith("pegboard_")]
    assert [name for name in fixtures if f"| `{name}` |" not in table] == []

"""examples/pegboard-hello tests itself with pegboard.testing, as a third
party would: its own pytest run, in its own folder, with none of
pegboard's conftest (the plugin is not installed; the kit loads it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "pegboard-hello"


@pytest.mark.slow
def test_the_example_plugin_s_own_tests_pass() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=EXAMPLE,
                            capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "8 passed" in result.stdout

"""In the ``pegboard`` command, what a plugin prints while it is imported is
not the command's output: it goes to stderr, and ``--json`` output stays JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pegboard.testing import PegboardEnv

PEGBOARD = Path(sys.executable).parent / "pegboard"

NOISY = '''
import os, subprocess, sys
print("printed at import")
os.write(1, b"written to fd 1 at import\\n")
subprocess.run([sys.executable, "-c", "print('a child at import')"], check=True)
'''


@pytest.mark.slow
def test_a_plugin_printing_at_import_leaves_the_output_alone(pegboard_env: PegboardEnv, tmp_path: Path) -> None:
    pegboard_env.local_plugin("noisy", NOISY)
    out = subprocess.run([str(PEGBOARD), "tools", "list", "--json", "--cwd", str(tmp_path)], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)  # nothing but the listing
    for line in ("printed at import", "written to fd 1 at import", "a child at import"):
        assert line in out.stderr and line not in out.stdout

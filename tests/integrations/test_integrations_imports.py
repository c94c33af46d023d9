"""Heavy framework imports stay out of ``import pegboard``: an adapter's
framework is imported only when that adapter is."""

from __future__ import annotations

import subprocess
import sys
import pytest

FRAMEWORKS = ("pydantic_ai", "agents", "langchain_core", "claude_agent_sdk", "anthropic", "openai")


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return {m.split(".")[0] for m in out.stdout.split()}


@pytest.mark.slow
def test_import_pegboard_imports_no_framework() -> None:
    assert _imported_after("import pegboard, pegboard.integrations\nfrom pegboard import Toolbox, ToolResult") \
        == set()


@pytest.mark.slow
def test_each_adapter_imports_its_own_framework_only() -> None:
    assert "pydantic_ai" in _imported_after("import pegboard.integrations.pydantic_ai")
    assert "pydantic_ai" not in _imported_after("import pegboard.integrations.openai_agents")
    assert _imported_after("import pegboard.integrations.langchain") == {"langchain_core"}
    assert "langchain_core" not in _imported_after("import pegboard.integrations.claude_agent_sdk")


@pytest.mark.slow
def test_an_adapter_without_its_framework_says_which_extra_installs_it() -> None:
    for adapter, module, extra in [("pydantic_ai", "pydantic_ai", "pydantic-ai"),
                                   ("openai_agents", "agents", "openai-agents"),
                                   ("langchain", "langchain_core", "langchain"),
                                   ("claude_agent_sdk", "claude_agent_sdk", "claude-agent-sdk")]:
        probe = (f"import sys\nsys.modules[{module!r}] = None  # as if not installed\n"
                 f"import pegboard.integrations.{adapter}")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert out.returncode == 1
        assert f"ImportError: this pegboard adapter needs {module!r}, which is not installed: " \
               f"pip install 'pegboard[{extra}]'" in out.stderr, out.stderr

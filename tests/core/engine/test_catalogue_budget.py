"""The deferred listing stays within its budget whatever the number of
tools; `defer` per plugin and per MCP server; `pegboard tools cost`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pegboard import Toolbox
import pytest

PEGBOARD = Path(sys.executable).parent / "pegboard"


def record_server(tmp_path: Path, count: int, extra: str = "") -> Path:
    """A server whose 1,000-tool list is already recorded, as after its first session."""
    from pegboard.plugins.mcp._config import collect_servers, own_folder
    from pegboard.plugins.mcp._store import ToolCache

    cfg = tmp_path / "pegboard.toml"
    cfg.write_text(f'[plugins.mcp.servers.big]\ncommand = "unused"\n{extra}')
    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"], listing=True)
    context = toolbox.context_for("mcp")
    (spec,) = collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": "The record's id."}}}
    ToolCache(own_folder(context)).update(spec, [(f"op_{n:04d}", f"Operation {n} on the records: " + "detail " * 30,
                                               schema) for n in range(count)])
    return cfg


def test_a_thousand_tools_stay_within_the_budget(tmp_path: Path) -> None:
    cfg = record_server(tmp_path, 1000)
    session = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"]).session()
    catalogue = session.catalogue()
    assert len([d for d in catalogue.deferred if d.name.startswith("mcp__big__")]) == 1000  # hosts see them all
    text = catalogue.deferred_text()
    assert len(text) <= 8_000
    assert "mcp big (1000 tools): mcp__big__op_0000" in text and "ToolSearch" in text
    # ToolSearch still finds what the listing no longer names one by one.
    import asyncio

    found = asyncio.run(session.call("ToolSearch", {"query": "select:mcp__big__op_0777"}))
    assert "mcp__big__op_0777" in found.text_content() and not found.is_error


def test_a_small_catalogue_is_listed_tool_by_tool_and_the_budget_is_configurable(tmp_path: Path) -> None:
    cfg = record_server(tmp_path, 5)
    text = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"]).session().catalogue().deferred_text()
    assert "- mcp__big__op_0004: Operation 4" in text
    cfg = record_server(tmp_path, 40, "[tools]\ndeferred_budget = 1000\n")
    text = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"]).session().catalogue().deferred_text()
    assert len(text) <= 1000 and "(40 tools)" in text


def test_defer_per_server_and_per_plugin(tmp_path: Path) -> None:
    cfg = record_server(tmp_path, 3, 'defer = "never"\n')
    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp"])
    assert all(toolbox.tools[f"mcp__big__op_000{n}"].loading == "always" for n in range(3))
    cfg.write_text(cfg.read_text() + '[plugins.fs]\ndefer = "always"\n')
    toolbox = Toolbox.load(cwd=tmp_path, config=cfg, plugins=["mcp", "fs"])
    assert toolbox.tools["Read"].loading == "deferred"
    names = [d.name for d in toolbox.session().catalogue().deferred]
    assert "Read" in names


@pytest.mark.slow
def test_tools_cost_names_what_each_source_adds(tmp_path: Path) -> None:
    cfg = record_server(tmp_path, 1000)
    out = subprocess.run([str(PEGBOARD), "--cwd", str(tmp_path), "--config", str(cfg), "tools", "cost", "--json"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    sources = {r["source"]: r for r in data["sources"]}
    assert sources["mcp big"]["deferred"] == 1000 and sources["fs"]["loaded"] >= 1
    assert data["deferred_listing_characters"] <= data["deferred_budget"] == 8000
    assert data["total_tokens"] == round(data["total_characters"] / 4)
    apis = {r["api"]: r for r in data["apis"]}
    # With the provider's own tool search every deferred tool goes whole (1,000 of them here);
    # through ToolSearch, only their listing, within the budget.
    assert apis["anthropic defer_loading"]["tools"] > 1000 > apis["anthropic"]["tools"]
    assert apis["anthropic defer_loading"]["characters"] > apis["anthropic"]["characters"]
    assert set(apis) == {"anthropic", "anthropic defer_loading", "openai chat strict", "openai responses strict",
                         "openai responses strict defer_loading"}
    human = subprocess.run([str(PEGBOARD), "--cwd", str(tmp_path), "--config", str(cfg), "tools", "cost"],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ)).stdout
    assert "mcp big" in human and "deferred listing:" in human and "per API" in human

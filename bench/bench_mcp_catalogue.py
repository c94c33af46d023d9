"""The cost of a big MCP server on every toolbox: ``Toolbox.load`` plus the
first catalogue with one recorded 1,000-tool server (its record parsed once), against the same with no
server, in alternating rounds of one run; and the size of the deferred
listing the model reads with that server (held under [tools] deferred_budget).

Run: ``python bench/bench_mcp_catalogue.py`` (``--rounds N``, ``--per-round N``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _ratios import Ratio, from_rounds, report  # noqa: E402

TOOLS = 1000


def _record(home: Path, project: Path) -> Path:
    """A user config naming one server whose 1,000-tool list is recorded, as after its first session."""
    from pegboard import Toolbox
    from pegboard.plugins.mcp._config import collect_servers, own_folder
    from pegboard.plugins.mcp._store import ToolCache

    cfg = home / "big.toml"
    cfg.write_text('[plugins.mcp.servers.big]\ncommand = "unused-never-started"\n')
    toolbox = Toolbox.load(cwd=project, config=cfg, listing=True)
    context = toolbox.context_for("mcp")
    (spec,) = collect_servers(toolbox.plugin_config("mcp"), context.root, context.settings, plugin="mcp")[0]
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": "The record's id."},
                                               "fields": {"type": "array", "items": {"type": "string"}}},
              "required": ["id"]}
    ToolCache(own_folder(context)).update(spec, [(f"records_op_{n:04d}", f"Operation {n} on the records store: "
                                               "reads or changes the records it names. " * 3, schema)
                                              for n in range(TOOLS)])
    return cfg


def _first_catalogue(project: Path, cfg: Path) -> str:
    from pegboard import Toolbox
    from pegboard._api.schemas import _MODEL_SCHEMAS

    # A new process's first catalogue: the built-ins' schemas are made once
    # per process (per model class), so a later toolbox in this one would
    # find them made and the baseline would not pay what a process pays.
    _MODEL_SCHEMAS.clear()
    session = Toolbox.load(cwd=project, config=cfg).session()
    catalogue = session.catalogue()
    catalogue.to_anthropic()
    return catalogue.deferred_text()


def main(rounds: int, per_round: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="pegboard-bench-mcp-catalogue-"))
    try:
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            os.environ[name] = str(work / name)
        os.environ["PEGBOARD_POLICY"] = str(work / "no-policy.toml")
        project = work / "project"
        project.mkdir()
        big = _record(work, project)
        none = work / "none.toml"
        none.write_text("")
        _first_catalogue(project, big), _first_catalogue(project, none)  # warm imports for both
        ratios = []
        for _ in range(rounds):
            times = {}
            for label, cfg in (("big", big), ("none", none)):
                start = time.perf_counter()
                for _ in range(per_round):
                    _first_catalogue(project, cfg)
                times[label] = (time.perf_counter() - start) / per_round
            ratios.append(times["big"] / times["none"])
        listing = _first_catalogue(project, big)
        lines = _one_by_one(project, big)
        # A record the plugin does not find would measure a catalogue without the server: refuse to report it.
        mcp_tools = [line for line in lines if "records_op_" in line]
        if len(mcp_tools) != TOOLS:
            raise SystemExit(f"bench_mcp_catalogue: the catalogue holds {len(mcp_tools)} of the server's "
                             f"{TOOLS} recorded tools; the record was not found")
        one_by_one = sum(len(line) + 1 for line in lines)
        print(f"Toolbox.load + first catalogue, {TOOLS:,}-tool server recorded vs none "
              f"({rounds} rounds of {per_round}); deferred listing {len(listing):,} characters "
              f"(one line per tool would be {one_by_one:,})")
        report(
            from_rounds(f"Toolbox.load + first catalogue with a recorded {TOOLS:,}-tool MCP server / no server",
                        ratios, 3.0, item="35.3"),
            Ratio(f"deferred listing with {TOOLS:,} MCP tools", len(listing), 8000, unit=" characters"),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _one_by_one(project: Path, cfg: Path) -> list[str]:
    from pegboard import Toolbox

    catalogue = Toolbox.load(cwd=project, config=cfg).session().catalogue()
    return [f"- {d.name}: {d.summary}" for d in catalogue.deferred]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=5)
    ns = parser.parse_args()
    main(ns.rounds, ns.per_round)

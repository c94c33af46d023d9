"""The first catalogue of a toolbox whose plugin registers many always-loaded
tools sharing one input model (10, 1,000 and 5,000), against the same
toolbox with none of them, in alternating rounds of one run.

Each measurement is a toolbox's first catalogue as a new process pays it:
the toolbox is loaded untimed, the process's per-class schema cache emptied,
and ``session().catalogue().to_anthropic()`` timed. The plugin's model is one
class, as a plugin wrapping an API with many operations has.

Run: ``python bench/bench_catalogue.py`` (``--rounds N``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _ratios import from_rounds, report  # noqa: E402

from pegboard import hookimpl  # noqa: E402

SIZES = (10, 1000, 5000)
TARGETS = {1000: 3.0}


class _ManyTools:
    """A plugin registering ``count`` always-loaded tools of one input model."""

    def __init__(self, count: int) -> None:
        from pydantic import BaseModel, Field

        class OperationArgs(BaseModel):
            id: str = Field(description="The record's id.")
            fields: list[str] = Field(default_factory=list, description="The fields to return.")
            note: str | None = Field(default=None, description="Why, for the audit.")

        self.count, self.model = count, OperationArgs

    @hookimpl
    def pegboard_register_tools(self, register: Any, config: Any, context: Any) -> None:
        from pegboard import Tool

        for n in range(self.count):
            register(Tool(name=f"RecordsOp{n:04d}", handler=_handle, input_model=self.model, read_only=True,
                          description=f"Operation {n} on the records store: reads the record it names."))


def _handle(args: Any, ctx: Any) -> str:
    return "done"


def _first_catalogue(project: Path, plugin: _ManyTools) -> float:
    from pegboard import Toolbox
    from pegboard._api.schemas import _MODEL_SCHEMAS  # the bench measures a new process's first catalogue

    toolbox = Toolbox.load(cwd=project, extra_plugins={"many": plugin})
    _MODEL_SCHEMAS.clear()
    start = time.perf_counter()
    tools = toolbox.session().catalogue().to_anthropic()
    took = time.perf_counter() - start
    if sum(t["name"].startswith("RecordsOp") for t in tools) != plugin.count:
        raise SystemExit(f"bench_catalogue: the catalogue holds {len(tools)} tools, not the plugin's {plugin.count}")
    return took


def main(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="pegboard-bench-catalogue-"))
    try:
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            os.environ[name] = str(work / name)
        os.environ["PEGBOARD_POLICY"] = str(work / "no-policy.toml")
        project = work / "project"
        project.mkdir()
        plugins = {size: _ManyTools(size) for size in (0, *SIZES)}
        for plugin in plugins.values():
            _first_catalogue(project, plugin)  # warm imports
        ratios: dict[int, list[float]] = {size: [] for size in SIZES}
        seconds: dict[int, list[float]] = {size: [] for size in (0, *SIZES)}
        for _ in range(rounds):
            for size in SIZES:
                # interleaved with a fresh baseline each time, so a busy moment hits both
                base = _first_catalogue(project, plugins[0])
                took = _first_catalogue(project, plugins[size])
                seconds[0].append(base)
                seconds[size].append(took)
                ratios[size].append(took / base)
        for size in (0, *SIZES):
            best = min(seconds[size])
            print(f"first catalogue, {size:>5,} always-loaded tools of one model: best {best * 1000:.1f} ms")
        report(*(from_rounds(f"first catalogue, {size:,} always-loaded tools of one model / none", ratios[size],
                             TARGETS.get(size, 0.0), bound="at most" if size in TARGETS else "info", item="35.3")
                 for size in SIZES))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    main(parser.parse_args().rounds)

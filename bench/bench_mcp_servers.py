"""The first MCP call of a session as the number of configured servers grows.

Each size's servers are cheap SDK ``MCPServer`` processes over stdio, their
tools recorded once (as the first toolbox does). A round loads a toolbox,
opens a session, times its first call to one server's tool, and closes the
session; the sizes are interleaved within a round, and each size's time is a
ratio against one server configured in the same round. Target: at most 2x at
8 servers (the first call starts the server it needs first, the rest behind
it); 30 is shown for the curve.

Run: ``python bench/bench_mcp_servers.py`` (``--rounds N``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _ratios import Ratio, from_rounds, report  # noqa: E402

SIZES = (1, 8, 30)
TARGET_AT = 8

CHEAP_SERVER = '''
from mcp.server import MCPServer
server = MCPServer("cheap")

@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text

server.run()
'''


def _config(work: Path, servers: int) -> Path:
    script = work / "cheap_server.py"
    lines = []
    for i in range(servers):
        lines += [f"[plugins.mcp.servers.s{i}]", f"command = {json.dumps(sys.executable)}",
                  f"args = [{json.dumps(str(script))}]"]
    lines += ["[permissions]", f"allow = {json.dumps([f'mcp__s{i}' for i in range(servers)])}"]
    path = work / f"servers-{servers}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def _first_call(project: Path, config: Path) -> float:
    from pegboard import Toolbox

    toolbox = Toolbox.load(cwd=project, config=config, plugins=["mcp"])
    session = toolbox.session()
    try:
        start = time.perf_counter()
        result = await session.call("mcp__s0__echo", {"text": "hi"})
        took = time.perf_counter() - start
    finally:
        await session.aclose()
    if result.is_error or result.text_content() != "hi":
        raise SystemExit(f"bench_mcp_servers: the first call failed: {result.text_content()}")
    return took


async def main(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-mcp-servers-"))
    try:
        # Isolated config and data when run on its own (bench/run.py isolates them too).
        for key, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache")):
            os.environ.setdefault(key, str(work / sub))
        os.environ.setdefault("PEGBOARD_POLICY", str(work / "no-policy.toml"))
        (work / "cheap_server.py").write_text(CHEAP_SERVER)
        project = work / "project"
        project.mkdir()
        configs = {n: _config(work, n) for n in SIZES}
        from pegboard import Toolbox

        for n, config in configs.items():  # record every server's tools, as the first toolbox does
            listed = Toolbox.load(cwd=project, config=config, plugins=["mcp"])
            missing = [f"s{i}" for i in range(n) if f"mcp__s{i}__echo" not in listed.tools]
            if missing:
                raise SystemExit(f"bench_mcp_servers: not recorded at {n} servers: {missing}: "
                                 f"{listed.settings.problems}")
        await _first_call(project, configs[1])  # warm imports
        times: dict[int, list[float]] = {n: [] for n in SIZES}
        for _ in range(rounds):
            for n in SIZES:
                times[n].append(await _first_call(project, configs[n]))
        ratios = {n: [t / one for t, one in zip(times[n], times[1], strict=True)] for n in SIZES}
        table = ", ".join(f"{n}: {statistics.median(times[n]) * 1000:.0f} ms ({statistics.median(ratios[n]):.2f}x)"
                          for n in SIZES)
        print(f"first MCP call by servers configured ({rounds} rounds): {table}")
        report(
            from_rounds(f"first MCP call, {TARGET_AT} servers configured / 1", ratios[TARGET_AT], 2.0,
                        note=f"by servers configured: {table}", item="35.2"),
            from_rounds(f"first MCP call, {SIZES[-1]} servers configured / 1", ratios[SIZES[-1]], 0.0,
                        bound="info", item="35.2"),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args().rounds))

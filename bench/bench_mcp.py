"""MCP benchmarks for pegboard, printed as ratios measured in the same run.

1. A tool call through pegboard's MCP client (the mcp plugin's server
   connection, stdio) vs the SDK's ``Client`` calling the same server
   directly. Target: < 1.2x. The full pegboard pipeline (``Session.call``:
   validation, permission engine, hooks) over the same connection is shown too.
2. ``pegboard serve`` answering tools/call (Read of a small file) vs an SDK
   ``MCPServer`` with an equivalent Read tool, both over stdio. Target: < 1.5x.
3. Cold start to the first tools/list answer: ``pegboard serve`` vs that
   ``MCPServer`` (both spawned as stdio subprocesses).

Run: ``python bench/bench_mcp.py`` (``--calls N``, ``--starts N``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from _ratios import Ratio, from_rounds, report  # noqa: E402

PEGBOARD = Path(sys.executable).parent / "pegboard"
KITCHEN_SINK = ROOT / "tests" / "mcp_servers" / "kitchen_sink.py"

# An SDK server with a Read tool that does what pegboard's Read does for a
# small text file: read it, number the lines.
PLAIN_READ_SERVER = '''
from mcp.server import MCPServer
server = MCPServer("plain")

@server.tool(description="Read a file with line numbers.")
def Read(file_path: str, offset: int = 1, limit: int = 2000) -> str:
    with open(file_path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    chosen = lines[offset - 1: offset - 1 + limit]
    return "\\n".join(f"{i:>6}\\t{line}" for i, line in enumerate(chosen, start=offset))

server.run()
'''


async def _timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return out


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def bench_client(calls: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        return await _bench_client(work, calls)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _bench_client(work: Path, calls: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters
    from pegboard import Toolbox
    from pegboard.plugins.mcp._config import ServerConfig, ServerSpec
    from pegboard.plugins.mcp._manager import ServerConnection

    spec = ServerSpec("ks", ServerConfig(command=sys.executable, args=[str(KITCHEN_SINK)]), "bench", False, work)
    # Isolated config and data: the bench must not touch the user's pegboard files.
    for key, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache")):
        os.environ[key] = str(work / sub)
    os.environ["PEGBOARD_POLICY"] = str(work / "no-policy.toml")
    conn = ServerConnection(spec, log_dir=work)
    params = StdioServerParameters(command=sys.executable, args=[str(KITCHEN_SINK)])

    config = work / "bench.toml"
    config.write_text(f'[plugins.mcp.servers.ks]\ncommand = "{sys.executable}"\nargs = ["{KITCHEN_SINK}"]\n'
                      '[permissions]\nallow = ["mcp__ks"]\n')
    toolbox = Toolbox.load(cwd=work, config=config, plugins=["mcp"])
    # Record the tool list once, as `pegboard mcp refresh` would, then reload.
    from pegboard._loading.config import data_dir
    from pegboard.plugins.mcp._config import collect_servers
    from pegboard.plugins.mcp._pool import ServerPool

    specs, _ = collect_servers(toolbox.plugin_config("mcp"), toolbox.settings.root, toolbox.settings, plugin="mcp")
    pool = ServerPool(specs, data_dir=data_dir(), log_dir=work)
    await pool.connection("ks").ensure_started()
    await pool.aclose()
    toolbox = Toolbox.load(cwd=work, config=config, plugins=["mcp"])
    session = toolbox.session()
    check = await session.call("mcp__ks__echo", {"text": "check"})
    assert not check.is_error and check.text_content() == "check", check.text_content()

    args = {"text": "hello"}
    async with Client(params, cache=None) as sdk:
        await conn.ensure_started()
        await session.call("mcp__ks__echo", args)  # start the session's own server
        for _ in range(20):  # warm up all three paths
            await sdk.call_tool("echo", args)
            await conn.call_tool("echo", args)
            await session.call("mcp__ks__echo", args)
        sdk_s: list[float] = []
        ours: list[float] = []
        full: list[float] = []
        # Interleaved rounds, so that drift on the machine hits all paths alike.
        for _ in range(max(1, calls // 50)):
            sdk_s += await _timed(lambda: sdk.call_tool("echo", args), 50)
            ours += await _timed(lambda: conn.call_tool("echo", args), 50)
            full += await _timed(lambda: session.call("mcp__ks__echo", args), 50)
    await conn.stop()
    await session.aclose()
    per_batch = [statistics.median(ours[i:i + 50]) / statistics.median(sdk_s[i:i + 50])
                 for i in range(0, len(ours), 50)]
    return {"sdk": _median_ms(sdk_s), "pegboard_client": _median_ms(ours), "pegboard_session": _median_ms(full),
            "client_rounds": per_batch}


def _child_env(home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env.update({"XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
                "XDG_CACHE_HOME": str(home / "cache"), "PEGBOARD_POLICY": str(home / "no-policy.toml")})
    return env


async def bench_serve(calls: int, starts: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        return await _bench_serve(work, calls, starts)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _bench_serve(work: Path, calls: int, starts: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    (work / "small.txt").write_text("".join(f"line {i}\n" for i in range(50)))
    plain = work / "plain_server.py"
    plain.write_text(PLAIN_READ_SERVER)
    env = _child_env(work)
    peg = StdioServerParameters(command=str(PEGBOARD), args=["serve", "--cwd", str(work)], env=env, cwd=str(work))
    sdk = StdioServerParameters(command=sys.executable, args=[str(plain)], env=env, cwd=str(work))
    args = {"file_path": str(work / "small.txt")}

    async def cold(params: StdioServerParameters) -> float:
        t = time.perf_counter()
        async with Client(params, cache=None) as client:
            await client.list_tools()
            elapsed = time.perf_counter() - t
        return elapsed

    cold_peg: list[float] = []
    cold_sdk: list[float] = []
    for _ in range(starts):
        cold_sdk.append(await cold(sdk))
        cold_peg.append(await cold(peg))

    async with Client(peg, cache=None) as pc, Client(sdk, cache=None) as sc:
        for _ in range(20):
            r = await pc.call_tool("Read", args)
            assert not r.is_error, r.content
            await sc.call_tool("Read", args)
        p: list[float] = []
        s: list[float] = []
        for _ in range(max(1, calls // 50)):
            s += await _timed(lambda: sc.call_tool("Read", args), 50)
            p += await _timed(lambda: pc.call_tool("Read", args), 50)
    return {"serve_call": _median_ms(p), "sdk_call": _median_ms(s),
            "serve_cold": _median_ms(cold_peg), "sdk_cold": _median_ms(cold_sdk),
            "cold_rounds": [a / b for a, b in zip(cold_peg, cold_sdk)]}


async def main(calls: int, starts: int) -> None:
    client = await bench_client(calls)
    serve = await bench_serve(calls, starts)
    r1 = client["pegboard_client"] / client["sdk"]
    r1b = client["pegboard_session"] / client["sdk"]
    r2 = serve["serve_call"] / serve["sdk_call"]
    r3 = serve["serve_cold"] / serve["sdk_cold"]
    print(f"MCP benchmarks (medians; {calls} calls per path, {starts} cold starts each)")
    print(f"1. tools/call via pegboard's MCP client  {client['pegboard_client']:.3f} ms  vs SDK Client "
          f"{client['sdk']:.3f} ms  ratio {r1:.2f}x  (target < 1.2x) {'ok' if r1 < 1.2 else 'MISSED'}")
    print(f"   same call through Session.call (whole pipeline) {client['pegboard_session']:.3f} ms  "
          f"ratio {r1b:.2f}x  (for information)")
    print(f"2. pegboard serve tools/call (Read)      {serve['serve_call']:.3f} ms  vs SDK MCPServer "
          f"{serve['sdk_call']:.3f} ms  ratio {r2:.2f}x  (target < 1.5x) {'ok' if r2 < 1.5 else 'MISSED'}")
    print(f"3. cold start to first tools/list        pegboard serve {serve['serve_cold']:.0f} ms  vs SDK "
          f"MCPServer {serve['sdk_cold']:.0f} ms  ratio {r3:.2f}x")
    report(
        Ratio("tools/call through pegboard's MCP client / SDK Client", r1, 1.2, bound="under",
              low=min(client["client_rounds"]), high=max(client["client_rounds"])),
        Ratio("the same call through Session.call / SDK Client", r1b, 0, bound="info"),
        Ratio("pegboard serve tools/call (Read) / SDK MCPServer", r2, 1.5, bound="under"),
        from_rounds("pegboard serve cold start to first tools/list / SDK MCPServer", serve["cold_rounds"], 1.3),
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--starts", type=int, default=5)
    ns = parser.parse_args()
    anyio.run(main, ns.calls, ns.starts)

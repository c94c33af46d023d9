"""``pegboard serve --http`` for a team, printed as ratios measured in the same run.

1. Calls per second (Read of a small file, several clients at once, each
   signing in with an API key) through a team's server against a direct
   ``serve --http`` for one person (its start token, sessions in memory):
   a team replica reached directly (its sessions in the store, read again at
   each request: stateless), one replica behind the alternating proxy the
   replica tests use, and two replicas behind it. Each ratio is the direct
   server's calls per second over the other's: what a call costs more.
2. The cost of signing in, per request: the same calls on one server with
   its start token (a constant-time compare), an API key (a lookup in the
   store) and an OAuth access token (a JWT checked against a local
   issuer's key), one client at a time.

The store is a PostgreSQL database of the bench's own on 127.0.0.1:5432
(dropped at the end), else SQLite, as the first line says.

Run: ``python bench/bench_serve_team.py`` (``--calls N``, ``--clients N``, ``--rounds N``).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
from _alternating_proxy import AlternatingProxy  # noqa: E402
from _ratios import Ratio, from_rounds, report  # noqa: E402
from _served import Serve, add_key, mcp_client, start_serve, stop_serve  # noqa: E402

AUDIENCE = "https://pegboard.bench/mcp"


def postgres() -> tuple[str, Any] | None:
    """A database of the bench's own, and how to drop it; None when no server answers."""
    try:
        import psycopg

        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                                connect_timeout=3)
    except Exception:
        return None
    name = f"pegboard_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()

    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", drop


class Issuer:
    """A local issuer: its JWKS on 127.0.0.1 and tokens signed with its key."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwks = json.dumps({"keys": [{**json.loads(RSAAlgorithm.to_jwk(self.key.public_key())), "kid": "k1",
                                     "use": "sig", "alg": "RS256"}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(jwks)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, sub: str) -> str:
        import jwt

        now = int(time.time())
        return jwt.encode({"iss": self.url, "sub": sub, "aud": AUDIENCE, "scope": "pegboard:write", "iat": now,
                           "exp": now + 3600}, self.key, algorithm="RS256", headers={"kid": "k1"})


async def calls_per_second(url: str, credential: str, project: Path, clients: int, calls: int) -> float:
    """``clients`` MCP clients at once, each making ``calls`` Read calls; calls per second."""
    path = str(project / "notes.txt")

    async def one(done: list[int]) -> None:
        async with mcp_client(url, credential) as client:
            await client.call_tool("Read", {"file_path": path})  # warm: the session made, the tool listed
            ready.append(1)
            await start.wait()
            for _ in range(calls):
                result = await client.call_tool("Read", {"file_path": path})
                assert not result.is_error, result.content
                done.append(1)

    ready: list[int] = []
    start = anyio.Event()
    done: list[int] = []
    began = 0.0
    async with anyio.create_task_group() as tg:
        for _ in range(clients):
            tg.start_soon(one, done)
        while len(ready) < clients:
            await anyio.sleep(0.01)
        began = time.perf_counter()
        start.set()
    return len(done) / (time.perf_counter() - began)


async def per_call_ms(url: str, credential: str, project: Path, calls: int) -> float:
    path = str(project / "notes.txt")
    async with mcp_client(url, credential) as client:
        await client.call_tool("Read", {"file_path": path})
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            await client.call_tool("Read", {"file_path": path})
            times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main(calls: int, clients: int, rounds: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="pegboard-bench-team-"))
    saved = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(home / var.lower())
    os.environ["PEGBOARD_POLICY"] = str(home / "no-policy.toml")
    os.environ.pop("PEGBOARD_CONFIG", None)
    pg = postgres()
    store = pg[0] if pg else f"sqlite:///{home / 'store.db'}"
    issuer = Issuer()
    project = home / "project"
    project.mkdir()
    (project / "notes.txt").write_text("".join(f"line {n}\n" for n in range(40)))
    user = home / "xdg_config_home" / "pegboard" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[store]\nurl = "{store}"\n')
    team = home / "team.toml"
    team.write_text(f'[plugins.mcp.serve]\nurl = "{AUDIENCE}"\napi_keys = true\nstateless = true\n'
                    'approvals = "approvers"\n'
                    f'[plugins.mcp.serve.oauth]\nissuer = "{issuer.url}"\njwks_url = "{issuer.url}/jwks.json"\n'
                    'scopes = { "pegboard:write" = "workspace" }\n')
    running: list[Serve] = []
    try:
        direct = start_serve(project)
        first = start_serve(project, "--config", str(team))
        second = start_serve(project, "--config", str(team))
        running += [direct, first, second]
        key = add_key(project, "bench", "--config", str(team))
        token = direct.token()
        print(f"store: {'PostgreSQL' if pg else 'SQLite (no PostgreSQL at 127.0.0.1:5432)'}; {clients} clients x "
              f"{calls} calls, {rounds} rounds")
        rows: dict[str, list[float]] = {"team": [], "one": [], "two": []}
        figures: dict[str, list[float]] = {"direct": [], "team": [], "one": [], "two": []}
        with AlternatingProxy([first.base]) as one_proxy, AlternatingProxy([first.base, second.base]) as two_proxy:
            for _ in range(rounds):
                base = anyio.run(calls_per_second, direct.url, token, project, clients, calls)
                team_cps = anyio.run(calls_per_second, first.url, key, project, clients, calls)
                one = anyio.run(calls_per_second, one_proxy.base + "/mcp", key, project, clients, calls)
                two = anyio.run(calls_per_second, two_proxy.base + "/mcp", key, project, clients, calls)
                for name, value in (("direct", base), ("team", team_cps), ("one", one), ("two", two)):
                    figures[name].append(value)
                rows["team"].append(base / team_cps)
                rows["one"].append(base / one)
                rows["two"].append(base / two)
        for name, label in (("direct", "direct serve --http (start token)"), ("team", "team replica, direct"),
                            ("one", "one replica behind the proxy"), ("two", "two replicas behind the proxy")):
            print(f"  {label:<40} {statistics.median(figures[name]):8.1f} calls/s")

        signin: dict[str, list[float]] = {"token": [], "key": [], "jwt": []}
        for _ in range(rounds):
            signin["token"].append(anyio.run(per_call_ms, first.url, first.token(), project, calls))
            signin["key"].append(anyio.run(per_call_ms, first.url, key, project, calls))
            signin["jwt"].append(anyio.run(per_call_ms, first.url, issuer.token("bench-jwt"), project, calls))
        for name in signin:
            print(f"  one call signed in with {name:<6} {statistics.median(signin[name]):7.2f} ms")
        report(
            from_rounds("team replica (stateless, store-backed session) per call / direct serve", rows["team"], 2.5),
            from_rounds("one replica behind the proxy per call / direct serve", rows["one"], 3.0),
            from_rounds("two replicas behind the proxy per call / direct serve", rows["two"], 3.0),
            from_rounds("two replicas' calls per second / one replica's (2 cores shared: no gain expected)",
                        [t / o for t, o in zip(figures["two"], figures["one"], strict=True)], 0, bound="info"),
            from_rounds("a call signed in with an API key / with the start token",
                        [k / t for k, t in zip(signin["key"], signin["token"], strict=True)], 1.5),
            from_rounds("a call signed in with an OAuth JWT / with the start token",
                        [j / t for j, t in zip(signin["jwt"], signin["token"], strict=True)], 1.5),
        )
    finally:
        for served in running:
            stop_serve(served)
        issuer.server.shutdown()
        if pg:
            pg[1]()
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args()
    main(ns.calls, ns.clients, ns.rounds)

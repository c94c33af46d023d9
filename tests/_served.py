"""``pegboard serve --http`` processes for tests: started with JSON logs,
read until they say where they serve, stopped; and an MCP SDK client that
signs in with a bearer credential."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PEGBOARD = Path(sys.executable).parent / "pegboard"

# A team's server: keys, sessions in the store, asks for approvers, replicas taken for dead after 3 s.
TEAM = ('[plugins.mcp.serve]\napi_keys = true\nstateless = true\napprovals = "approvers"\n'
        'approval_timeout_s = 120\nreplica_timeout_s = 3\n[audit]\nenabled = true\n')


@dataclass
class Serve:
    proc: subprocess.Popen[bytes]
    url: str = ""
    token_file: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @property
    def base(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    def token(self) -> str:
        return Path(self.token_file).read_text().strip()

    def drain(self) -> list[dict[str, Any]]:
        """Every event logged so far."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return self.events
            if line is None:
                return self.events
            self._take(line)

    def _take(self, line: str) -> None:
        try:
            self.events.append(json.loads(line))
        except ValueError:
            self.events.append({"event": "text", "message": line})


def start_serve(project: Path, *extra: str, address: str = "127.0.0.1:0", env: dict[str, str] | None = None) -> Serve:
    """Started with ``--log-format json``; returned once it serves (and said where its token is)."""
    proc = subprocess.Popen([str(PEGBOARD), "serve", "--cwd", str(project), "--http", address, "--log-format", "json",
                             *extra], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env or dict(os.environ))
    served = Serve(proc)

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            served.lines.put(raw.decode(errors="replace"))
        served.lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = served.lines.get(timeout=60)
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"pegboard serve said nothing in 60 s: {served.events}") from None
        if line is None:
            raise AssertionError(f"pegboard serve exited ({proc.wait()}): {served.events}")
        served._take(line)
        event = served.events[-1]
        if event.get("event") == "listening":
            served.url = event["url"]
        elif event.get("event") == "token":
            served.token_file = event["where"]
        elif event.get("event") == "serving":
            return served


def stop_serve(served: Serve) -> None:
    if served.proc.poll() is None:
        served.proc.terminate()
        try:
            served.proc.wait(20)
        except subprocess.TimeoutExpired:
            served.proc.kill()
            served.proc.wait(10)


def pegboard(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PEGBOARD), "--cwd", str(project), *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))


def add_key(project: Path, name: str, *options: str) -> str:
    made = pegboard(project, "serve", "keys", "add", name, *options)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


@asynccontextmanager
async def mcp_client(url: str, credential: str | None, **options: Any) -> AsyncIterator[Any]:
    """An MCP SDK client signed in with ``credential`` (sent as a bearer token)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {credential}"} if credential is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


@pytest.fixture
def pg_store(postgres_database: str, user_config: Callable[[str], Path]) -> Iterator[str]:
    """A schema of its own in this run's PostgreSQL database, named in the user's config."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    conninfo = f"host=127.0.0.1 port=5432 user=postgres dbname={postgres_database.rsplit('/', 1)[1]}"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{postgres_database}?options=-csearch_path%3D{schema}"
    user_config(f'[store]\nurl = "{url}"\n')
    yield url
    from pegboard._services.store import dispose_all

    dispose_all()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def replicas(project: Path, pg_store: str, user_config: Callable[[str], Path]) -> Iterator[tuple[Serve, Serve]]:
    user_config(TEAM)
    first = start_serve(project)
    second = start_serve(project)
    try:
        yield first, second
    finally:
        stop_serve(first)
        stop_serve(second)

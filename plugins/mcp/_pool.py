"""The servers of one session: started on first use (the one asked for first,
the rest in the background), stopped at close."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

import mcp_types as types

from ._config import ServerSpec
from ._manager import ClientSide, ServerConnection, ServerUnavailable
from ._store import Approvals, CachedTool, ToolCache, ToolListing

__all__ = ["ServerPool"]


class ServerPool:
    def __init__(
        self,
        specs: list[ServerSpec],
        *,
        data_dir: Path,
        log_dir: Path | None = None,
        emit: Callable[[str, dict[str, Any]], None] | None = None,
        targets: Mapping[str, Any] | None = None,
        on_tools_changed: Callable[[], None] | None = None,
        client_side: ClientSide | None = None,
        interaction: Any = None,
    ) -> None:
        self.specs = {s.name: s for s in specs}
        self.approvals = Approvals(data_dir)
        self.cache = ToolCache(data_dir)
        self._emit = emit or (lambda kind, data: None)
        # Tells the toolbox to register this plugin's tools again from the cache.
        self._on_tools_changed = on_tools_changed
        self.listings: dict[str, ToolListing] = {}
        self.connections: dict[str, ServerConnection] = {}
        self._kicked = False
        self._closed = False
        self._background: list[asyncio.Task[Any]] = []
        log_dir = log_dir if log_dir is not None else data_dir / "logs"
        for spec in specs:
            if not spec.config.enabled or not self.approvals.is_approved(spec):
                continue
            listing = self.cache.load(spec)
            if listing is not None:
                self.listings[spec.name] = listing
            self.connections[spec.name] = ServerConnection(
                spec, target=(targets or {}).get(spec.name), log_dir=log_dir, on_listing=self._listed,
                client_side=client_side, data_dir=data_dir, interaction=interaction)

    def _listed(self, conn: ServerConnection, tools: list[types.Tool]) -> None:
        """A server (re)started: refresh the on-disk cache, report changed tools."""
        listing, changed = self.cache.update(
            conn.spec, [(t.name, t.description, t.input_schema, t.title) for t in tools])
        before = self.listings.get(conn.name)
        self.listings[conn.name] = listing
        old = {t.name for t in before.tools} if before else set()
        added = [t.name for t in listing.tools if before is not None and t.name not in old]
        removed = sorted(old - {t.name for t in listing.tools})
        if changed or added or removed:
            self._emit("mcp.tools_changed", {"server": conn.name, "changed": changed,
                                             "added": added, "removed": removed})
        was = {t.name: t.hash for t in before.tools} if before else None
        if self._on_tools_changed is not None and was != {t.name: t.hash for t in listing.tools}:
            from . import RELISTING

            token = RELISTING.set(True)
            try:
                self._on_tools_changed()
            finally:
                RELISTING.reset(token)

    def why_unavailable(self, name: str) -> str | None:
        spec = self.specs.get(name)
        if spec is None:
            known = ", ".join(sorted(self.specs)) or "none"
            return f"no MCP server is called {name!r} (configured: {known})"
        if not spec.config.enabled:
            return f"MCP server {name!r} is disabled (enabled = false in {spec.source})"
        if name not in self.connections:
            return (f"MCP server {name!r} comes from the project ({spec.source}) and has not been approved "
                    f"to run; the user can approve it with `pegboard mcp approve {name}`")
        return None

    def connection(self, name: str) -> ServerConnection:
        why = self.why_unavailable(name)
        if why is not None:
            raise ServerUnavailable(why)
        self.start_all(first=name)
        return self.connections[name]

    def start_all(self, first: str | None = None) -> None:
        """On first use, start the server asked for, then every other one in
        the background once it is up (or down): the first call pays for one
        start, not for all of them competing for the cores, and the next
        server the model reaches for is already up, its tools listed."""
        if self._kicked:
            return
        self._kicked = True
        head = self.connections.get(first) if first is not None else None
        rest = [c for c in self.connections.values() if c is not head]
        task = asyncio.create_task(self._start_in_order(head, rest), name="mcp-start")
        self._background.append(task)

    async def _start_in_order(self, head: ServerConnection | None, rest: list[ServerConnection]) -> None:
        if head is not None:
            await self._start_quietly(head)
            # Let the call that needed it go out before the others take the cores.
            await asyncio.sleep(0)
        for conn in rest:
            if self._closed:
                return
            task = asyncio.create_task(self._start_quietly(conn), name=f"mcp-start-{conn.name}")
            self._background.append(task)

    @staticmethod
    async def _start_quietly(conn: ServerConnection) -> None:
        # A failure is recorded on the connection and reported to whoever calls it.
        with suppress(ServerUnavailable):
            await conn.ensure_started()

    def cached_tool(self, server: str, tool: str) -> CachedTool | None:
        listing = self.listings.get(server)
        if listing is None:
            return None
        return next((t for t in listing.tools if t.name == tool), None)

    def approve_tool(self, server: str, tool: CachedTool) -> None:
        self.cache.approve_tool(self.specs[server], tool.name, tool.hash)
        tool.approved_hash = tool.hash

    async def aclose(self) -> None:
        # No new start after this; starts under way are cancelled, then every
        # server stopped, so one started in the background leaves no process.
        self._closed = True
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*(c.stop() for c in self.connections.values()), return_exceptions=True)
        for task in list(self._background):
            with suppress(asyncio.CancelledError, Exception):
                await task

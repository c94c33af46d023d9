"""Signing in to a url server: ``pegboard mcp login`` and the model's
``mcp__<server>__authenticate`` / ``complete_authentication`` tools.

A sign-in is one real connection attempt with a person in the loop: the
SDK's flow discovers, registers and builds the authorization URL; the URL
goes to the browser (login) or to the model, which shows it to the user;
the loopback listener takes the redirect; the token exchange finishes; the
server's tools are listed and recorded, and the catalogue follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ._config import ServerSpec
from ._tokens import TokenFile

__all__ = ["SignIn"]

URL_WAIT_S = 30.0


class SignIn:
    def __init__(self, spec: ServerSpec, data_dir: Path, open_url: Callable[[str], Awaitable[None]] | None = None,
                 scope: str | None = None):
        """``scope``: what the server asked for more of (a step-up); the
        person is then asked for it even though the old tokens still connect."""
        self.spec = spec
        self.scope = scope
        self.data_dir = data_dir
        self._open_url = open_url
        self._url: asyncio.Future[str] | None = None
        self._task: asyncio.Task[list[str]] | None = None
        self._pool: Any = None
        self._callback: Any = None

    async def start(self) -> str | None:
        """Begin; the URL the person must open, or None when no one was
        needed after all (a refresh token or client credentials did it)."""
        import os

        from ._auth import LoopbackCallback, redirect_port
        from ._config import OAuthConfig
        from ._pool import ServerPool

        config = self.spec.config.oauth or OAuthConfig()
        loop = asyncio.get_running_loop()
        self._url = loop.create_future()
        if config.grant == "authorization_code":
            self._callback = LoopbackCallback(redirect_port(TokenFile(self.data_dir, self.spec), config))
            await self._callback.start()

        async def redirect(url: str) -> None:
            if self._url is not None and not self._url.done():
                self._url.set_result(url)
            if self._open_url is not None:
                await self._open_url(url)

        async def callback() -> Any:
            return await self._callback.wait()

        self._pool = ServerPool([self.spec], data_dir=self.data_dir, interaction=(redirect, callback))
        conn = self._pool.connections.get(self.spec.name)
        if conn is None:
            raise RuntimeError(self._pool.why_unavailable(self.spec.name) or "the server cannot run")
        conn._environ = dict(os.environ)

        async def connect() -> list[str]:
            if self.scope and config.grant == "authorization_code":
                from ._auth import authorize_for_scope

                await authorize_for_scope(self.spec, self.data_dir, dict(os.environ), (redirect, callback),
                                          self.scope)
            await conn.ensure_started()
            return sorted(conn.tools)

        self._task = asyncio.create_task(connect(), name=f"mcp-sign-in-{self.spec.name}")
        waiting: set[asyncio.Future[Any]] = {self._task, self._url}
        done, _ = await asyncio.wait(waiting, timeout=URL_WAIT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        if self._url in done:
            return self._url.result()
        if self._task in done:
            self._task.result()  # raises why it failed
            return None
        await self.close()
        raise TimeoutError(f"MCP server {self.spec.name!r} gave no sign-in address within {URL_WAIT_S:g} s")

    async def finish(self, timeout: float) -> list[str]:
        """Wait for the person and the token exchange; the server's tools."""
        assert self._task is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._task), timeout)
        finally:
            if self._task.done():
                await self.close()

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None
        if self._callback is not None:
            await self._callback.close()
            self._callback = None

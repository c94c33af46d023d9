"""The HTTP application ``pegboard serve --http`` runs: the MCP endpoint
behind the sign-in gate, and beside it what a load balancer, an OAuth
client and the operator reach without a client's credential.

| path | what |
| --- | --- |
| ``/mcp`` | Streamable HTTP (the MCP SDK's), for signed-in clients |
| ``/healthz`` | liveness: 200 while the process serves |
| ``/readyz`` | readiness: 200 when the store answers (and this replica's heartbeat reaches it), else 503 and why |
| ``/.well-known/oauth-protected-resource/mcp`` | RFC 9728 metadata (OAuth mode): the resource and its authorization server |
| ``/approvals/`` | the team's approvals page (``approvals = "approvers"``; its own sign-in) |
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["build_app", "Readiness"]

READY_CACHE_S = 1.0


class Readiness:
    """Whether this replica can do its work: its stores answer (at this
    code's schema) and its heartbeat reaches the store. Asked at most once
    a second, however often the load balancer polls."""

    def __init__(self, stores: list[Any], team: Any = None):
        self.stores = stores
        self.team = team
        self._last: tuple[float, list[str]] = (0.0, [])

    async def problems(self) -> list[str]:
        now = time.monotonic()
        if now - self._last[0] < READY_CACHE_S:
            return self._last[1]
        found: list[str] = []
        for store in self.stores:
            try:
                await store.run(_ping, read_only=True)
            except Exception as exc:
                found.append(f"store: {store.describe_error(exc)}")
        if self.team is not None and not self.team.alive:
            found.append(f"replica heartbeat: {self.team.problem or 'not yet in the store'}")
        self._last = (now, found)
        return found


def _ping(conn: Any) -> None:
    from sqlalchemy import text

    conn.execute(text("SELECT 1"))


def build_app(server: Any, *, plan: Any, port: int, credentials: Any, log: Any, serve: Any,
              readiness: Readiness, replica: str | None, stateless: bool, approvals: Any = None) -> Any:
    """The whole application: the SDK's Streamable HTTP app with our routes, behind the gate;
    ``approvals``: the team's approvals page (``_serve_approvals.TeamApprovals``), which signs its
    people in itself."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from ._serve_http import SignInGate, host_checks

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "replica": replica}, headers={"cache-control": "no-store"})

    async def readyz(request: Request) -> JSONResponse:
        problems = await readiness.problems()
        body = {"status": "unready" if problems else "ready", "replica": replica, "problems": problems}
        return JSONResponse(body, status_code=503 if problems else 200, headers={"cache-control": "no-store"})

    routes: list[Any] = [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
    metadata_url = None
    public = ["/healthz", "/readyz"]
    if serve.oauth is not None:
        from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes

        # As the operator wrote them: the metadata model keeps a URL without a path as it is, where
        # pydantic's AnyHttpUrl would add a "/" (an issuer is compared character for character, RFC 8414).
        resource: Any = serve.url
        metadata_url = str(build_resource_metadata_url(resource))
        found = create_protected_resource_routes(
            resource_url=resource, authorization_servers=[serve.oauth.issuer],
            scopes_supported=sorted(serve.oauth.scopes) or None, resource_name="pegboard")
        # RFC 9728's path (after /.well-known/oauth-protected-resource, the resource's own) and the
        # bare one, which clients that do not insert the path try.
        bare = Route("/.well-known/oauth-protected-resource", found[0].endpoint, methods=["GET", "OPTIONS"])
        routes += [*found, bare]
        public += [r.path for r in found] + ["/.well-known/oauth-protected-resource"]
    app = server.streamable_http_app(host=plan.host, stateless_http=stateless, custom_starlette_routes=routes,
                                     transport_security=host_checks(plan.host, port, plan.scheme, plan.allow_remote))
    gated = SignInGate(app, credentials, log, public=tuple(public), resource_metadata=metadata_url)
    if approvals is None:
        return gated
    from ._serve_approvals import PREFIX

    async def dispatch(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == PREFIX or path.startswith(PREFIX + "/"):
            await approvals(scope, receive, send)
        else:
            await gated(scope, receive, send)

    return dispatch

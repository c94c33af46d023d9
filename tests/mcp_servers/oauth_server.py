"""An OAuth-protected MCP server for the sign-in tests: an authorization
server and a resource server on one 127.0.0.1 port.

``python oauth_server.py PORT`` with ``OAUTH_OPTIONS`` (JSON) choosing what
the authorization server offers: ``dcr`` (dynamic registration), ``cimd``
(client ID metadata documents), ``clients`` (pre-registered
``{id: {"secret": ..., "method": ...}}``), ``jwt_clients`` (``{id: PEM public
key}``), ``expires_in``. Tools: ``whoami`` needs scope ``read``; ``admin``
needs ``read write`` (a 403 asks for the step-up). ``GET /log`` returns what
the authorization server saw, for the tests to check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import sys
import time
from typing import Any
from urllib.parse import urlencode

import jwt
import uvicorn
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

OPTIONS: dict[str, Any] = json.loads(os.environ.get("OAUTH_OPTIONS", "{}"))
PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"
ISSUER = f"{BASE}/as"
RESOURCE = f"{BASE}/mcp"
LOG: list[dict[str, Any]] = []
CLIENTS: dict[str, dict[str, Any]] = {k: dict(v) for k, v in OPTIONS.get("clients", {}).items()}
CODES: dict[str, dict[str, Any]] = {}
TOKENS: dict[str, dict[str, Any]] = {}
REFRESH: dict[str, dict[str, Any]] = {}


def mcp_server() -> MCPServer:
    server = MCPServer("protected")

    @server.tool(description="Say who you are.")
    def whoami() -> str:
        return "a reader"

    @server.tool(description="Do something that needs more scope.")
    def admin() -> str:
        return "admin done"

    return server


async def prm(request: Request) -> Response:
    return JSONResponse({"resource": RESOURCE, "authorization_servers": [ISSUER], "scopes_supported": ["read", "write"]})


async def as_metadata(request: Request) -> Response:
    meta: dict[str, Any] = {
        "issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/authorize", "token_endpoint": f"{ISSUER}/token",
        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials",
                                  "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post",
                                                  "private_key_jwt"],
    }
    if OPTIONS.get("dcr", True):
        meta["registration_endpoint"] = f"{ISSUER}/register"
    if OPTIONS.get("cimd"):
        meta["client_id_metadata_document_supported"] = True
    return JSONResponse(meta)


async def register(request: Request) -> Response:
    body = await request.json()
    client_id = "dyn-" + secrets.token_hex(4)
    CLIENTS[client_id] = {"method": "none", "redirect_uris": body.get("redirect_uris", [])}
    LOG.append({"event": "register", "client_name": body.get("client_name"), "redirect_uris": body.get("redirect_uris")})
    return JSONResponse({"client_id": client_id, "token_endpoint_auth_method": "none", **body}, status_code=201)


async def authorize(request: Request) -> Response:
    q = dict(request.query_params)
    LOG.append({"event": "authorize", **q})
    client = q.get("client_id", "")
    known = client in CLIENTS or (OPTIONS.get("cimd") and client.startswith("https://"))
    if not known or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
        return JSONResponse({"error": "invalid_request"}, status_code=400)
    code = secrets.token_urlsafe(8)
    CODES[code] = {"client": client, "challenge": q["code_challenge"], "scope": q.get("scope", ""),
                   "redirect_uri": q["redirect_uri"], "resource": q.get("resource")}
    return RedirectResponse(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}",
                            status_code=302)


def _issue(client: str, scope: str) -> dict[str, Any]:
    token = "at-" + secrets.token_urlsafe(12)
    refresh = "rt-" + secrets.token_urlsafe(12)
    expires_in = int(OPTIONS.get("expires_in", 3600))
    TOKENS[token] = {"scope": set(scope.split()), "expires": time.time() + expires_in}
    REFRESH[refresh] = {"client": client, "scope": scope}
    return {"access_token": token, "token_type": "Bearer", "expires_in": expires_in, "refresh_token": refresh,
            "scope": scope}


def _client_auth(request: Request, form: dict[str, str]) -> str | None:
    """The authenticated client id, or None."""
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        ident, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return ident if CLIENTS.get(ident, {}).get("secret") == secret else None
    if form.get("client_assertion"):
        claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
        key = OPTIONS.get("jwt_clients", {}).get(claims.get("iss"))
        if key is None:
            return None
        jwt.decode(form["client_assertion"], key, algorithms=["ES256", "RS256"], audience=ISSUER)
        return str(claims["iss"])
    ident = form.get("client_id", "")
    if form.get("client_secret") is not None:
        return ident if CLIENTS.get(ident, {}).get("secret") == form["client_secret"] else None
    return ident if CLIENTS.get(ident, {}).get("method", "none") == "none" or ident.startswith("https://") else None


async def token(request: Request) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    grant = form.get("grant_type")
    LOG.append({"event": "token", "grant_type": grant, "resource": form.get("resource"),
                "auth": "basic" if request.headers.get("authorization", "").startswith("Basic ") else
                ("jwt" if form.get("client_assertion") else ("post" if "client_secret" in form else "none"))})
    client = _client_auth(request, form)
    if client is None:
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    if grant == "authorization_code":
        code = CODES.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if code is None or code["challenge"] != challenge or code["redirect_uri"] != form.get("redirect_uri"):
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        return JSONResponse(_issue(client, code["scope"]))
    if grant == "refresh_token":
        old = REFRESH.pop(form.get("refresh_token", ""), None)
        if old is None:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        return JSONResponse(_issue(client, old["scope"]))
    if grant == "client_credentials":
        return JSONResponse(_issue(client, form.get("scope") or "read write"))
    if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
        if form.get("assertion") not in JAGS:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        return JSONResponse(_issue(client, "read"))
    return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)


JAGS: set[str] = set()


async def idp_token(request: Request) -> Response:
    """The enterprise IdP: an ID token (``id-token-ok``) for an ID-JAG meant for our authorization server."""
    form = {k: str(v) for k, v in (await request.form()).items()}
    LOG.append({"event": "idp", "audience": form.get("audience"), "resource": form.get("resource"),
                "grant_type": form.get("grant_type")})
    if form.get("subject_token") != "id-token-ok" or form.get("audience") != ISSUER:
        return JSONResponse({"error": "invalid_grant"}, status_code=400)
    jag = "jag-" + secrets.token_urlsafe(8)
    JAGS.add(jag)
    return JSONResponse({"access_token": jag, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                         "token_type": "N_A"})


async def log(request: Request) -> Response:
    return JSONResponse(LOG)


class Protected:
    """The MCP endpoint behind bearer tokens: 401 without one, 403 for a
    tools/call of ``admin`` without the ``write`` scope."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        grant = TOKENS.get(bearer)
        challenge = f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp", scope="read"'
        if grant is None or grant["expires"] < time.time():
            return await Response(status_code=401, headers={"WWW-Authenticate": challenge})(scope, receive, send)
        body = b""
        more = True
        messages = []
        while more:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            payload = {}
        if (isinstance(payload, dict) and payload.get("method") == "tools/call"
                and payload.get("params", {}).get("name") == "admin" and "write" not in grant["scope"]):
            step_up = 'Bearer error="insufficient_scope", scope="read write", ' \
                      f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
            return await Response(status_code=403, headers={"WWW-Authenticate": step_up})(scope, receive, send)

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def main() -> None:
    server = mcp_server()
    inner = server.streamable_http_app()
    routes = [
        Route("/.well-known/oauth-protected-resource/mcp", prm),
        Route("/.well-known/oauth-authorization-server/as", as_metadata),
        Route("/as/register", register, methods=["POST"]),
        Route("/as/authorize", authorize),
        Route("/as/token", token, methods=["POST"]),
        Route("/idp/token", idp_token, methods=["POST"]),
        Route("/log", log),
    ]
    oauth = Starlette(routes=routes)
    protected = Protected(inner)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        # Lifespan and /mcp go to the MCP app; the OAuth endpoints to the rest.
        if scope["type"] == "http" and scope["path"] != "/mcp":
            return await oauth(scope, receive, send)
        await protected(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")


if __name__ == "__main__":
    main()

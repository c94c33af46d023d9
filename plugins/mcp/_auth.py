"""OAuth for url servers, with the SDK's client auth.

The SDK does the protocol: protected-resource and authorization-server
metadata discovery (path-based, then the fallbacks), dynamic client
registration or a client ID metadata document, PKCE, the resource parameter,
scope from ``WWW-Authenticate`` and step-up, refresh. pegboard adds where
tokens live (``_tokens.TokenFile``), the loopback redirect, and the rule
that nothing asks the person mid-call: a connection that would need a
browser raises ``SignInRequired``, and the person signs in with ``pegboard
mcp login`` or through the model's ``authenticate`` tools (``SignIn``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)

from ._config import OAuthConfig, ServerSpec, expand_vars
from ._tokens import TokenFile

__all__ = ["LoopbackCallback", "SignInRequired", "build_auth", "find_sign_in_required"]


class SignInRequired(Exception):
    """The server needs the person to sign in (again, or with more scope)."""

    def __init__(self, server: str, scope: str | None = None) -> None:
        self.server = server
        self.scope = scope
        more = f" with scope {scope!r}" if scope else ""
        super().__init__(f"MCP server {server!r} needs you to sign in{more}")


def find_sign_in_required(exc: BaseException) -> SignInRequired | None:
    """The SignInRequired inside whatever the transport wrapped it in."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SignInRequired):
            return current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None


def _not_our_refusal(record: logging.LogRecord) -> bool:
    """False for the SDK's traceback of a SignInRequired: the refusal is
    pegboard's own and is reported where the call or listing fails."""
    exc = record.exc_info[1] if record.exc_info else None
    return exc is None or find_sign_in_required(exc) is None


# The SDK logs every exception out of its auth flow with a traceback; with no
# logging configured, Python prints it to the person's terminal.
logging.getLogger("mcp.client.auth.oauth2").addFilter(_not_our_refusal)


class _Storage(TokenStorage):
    """The SDK's token storage over a TokenFile; also keeps what discovery
    learned (so a refresh after a restart goes to the right token endpoint)
    and when the access token expires."""

    def __init__(self, file: TokenFile, preset: OAuthClientInformationFull | None) -> None:
        self.file = file
        self.preset = preset
        self.context: Any = None  # the provider's, bound once it exists

    async def get_tokens(self) -> OAuthToken | None:
        raw = self.file.read().get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        values: dict[str, Any] = {"tokens": tokens.model_dump(mode="json", exclude_none=True),
                                  "expires_at": time.time() + tokens.expires_in if tokens.expires_in else None}
        context = self.context
        if context is not None and context.oauth_metadata is not None:
            values["oauth_metadata"] = context.oauth_metadata.model_dump(mode="json", exclude_none=True)
        if context is not None and context.protected_resource_metadata is not None:
            values["resource_metadata"] = context.protected_resource_metadata.model_dump(mode="json",
                                                                                         exclude_none=True)
        self.file.update(**values)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.preset is not None:
            return self.preset
        raw = self.file.read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.preset is None:
            self.file.update(client=client_info.model_dump(mode="json", exclude_none=True))


_Provider = TypeVar("_Provider")


def _restoring(base: type[_Provider]) -> type[_Provider]:
    class Restoring(base):  # type: ignore[misc, valid-type]
        """Starts from what the last sign-in learned: the token's expiry and
        the authorization server's metadata."""

        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            storage.context = self.context
            data = storage.file.read()
            if data.get("expires_at"):
                self.context.token_expiry_time = float(data["expires_at"])
            if data.get("oauth_metadata") and self.context.oauth_metadata is None:
                self.context.oauth_metadata = OAuthMetadata.model_validate(data["oauth_metadata"])
            if data.get("resource_metadata") and self.context.protected_resource_metadata is None:
                prm = ProtectedResourceMetadata.model_validate(data["resource_metadata"])
                self.context.protected_resource_metadata = prm
                if prm.authorization_servers:
                    self.context.auth_server_url = str(prm.authorization_servers[0])

    return Restoring


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redirect_port(file: TokenFile, config: OAuthConfig) -> int:
    """The configured port, else the one picked for this server before (a
    registered client's redirect URI must keep matching), else a new one."""
    if config.redirect_port is not None:
        return config.redirect_port
    kept = file.read().get("redirect_port")
    if isinstance(kept, int):
        return kept
    port = _free_port()
    file.update(redirect_port=port)
    return port


Interaction = tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]


def build_auth(spec: ServerSpec, data_dir: Path, environ: dict[str, str],
               interaction: Interaction | None = None) -> httpx2.Auth:
    """The httpx2 auth for a url server. ``interaction`` (open the URL, wait
    for the redirect) is given only where a person signs in; elsewhere a
    flow that needs one raises SignInRequired."""
    config = spec.config.oauth or OAuthConfig()
    file = TokenFile(data_dir, spec)
    url = expand_vars(spec.config.url or "", environ)
    secret = expand_vars(config.client_secret, environ) if config.client_secret else None
    if config.grant == "identity_assertion":
        return _identity_assertion(config, file, url, secret or "", environ)
    if config.grant == "client_credentials":
        from mcp.client.auth.extensions.client_credentials import (
            ClientCredentialsOAuthProvider,
            PrivateKeyJWTOAuthProvider,
            SignedJWTParameters,
        )

        assert config.client_id is not None
        storage = _Storage(file, None)
        if config.private_key_file is not None:
            key = Path(expand_vars(config.private_key_file, environ)).expanduser().read_text()
            assertion = SignedJWTParameters(issuer=config.client_id, subject=config.client_id,
                                            signing_algorithm=config.signing_algorithm, signing_key=key)
            return _restoring(PrivateKeyJWTOAuthProvider)(
                server_url=url, storage=storage, client_id=config.client_id,
                assertion_provider=assertion.create_assertion_provider(), scope=config.scope)
        return _restoring(ClientCredentialsOAuthProvider)(
            server_url=url, storage=storage, client_id=config.client_id, client_secret=secret or "",
            token_endpoint_auth_method=config.token_endpoint_auth_method, scope=config.scope)
    redirect = f"http://127.0.0.1:{redirect_port(file, config)}/callback"
    preset = None
    if config.client_id:
        preset = OAuthClientInformationFull(
            client_id=config.client_id, client_secret=secret, redirect_uris=[redirect],
            token_endpoint_auth_method=config.token_endpoint_auth_method if secret else "none")
    metadata = OAuthClientMetadata(client_name="pegboard", redirect_uris=[redirect],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   scope=config.scope)

    async def refuse(authorization_url: str) -> None:
        scope = parse_qs(urlsplit(authorization_url).query).get("scope", [None])[0]
        raise SignInRequired(spec.name, scope)

    async def no_callback() -> AuthorizationCodeResult:  # never reached: refuse raised first
        raise SignInRequired(spec.name)

    redirect_handler, callback_handler = interaction or (refuse, no_callback)
    return _restoring(OAuthClientProvider)(
        server_url=url, client_metadata=metadata, storage=_Storage(file, preset),
        redirect_handler=redirect_handler, callback_handler=callback_handler,
        client_metadata_url=config.client_metadata_url)


def _identity_assertion(config: OAuthConfig, file: TokenFile, url: str, secret: str,
                        environ: dict[str, str]) -> httpx2.Auth:
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    id_token = expand_vars(config.id_token or "", environ)
    idp = expand_vars(config.idp_token_endpoint or "", environ)

    async def fetch_id_jag(audience: str, resource: str) -> str:
        """RFC 8693 token exchange at the enterprise IdP: the ID token for an ID-JAG."""
        async with httpx2.AsyncClient(timeout=30.0) as http:
            response = await http.post(idp, data={
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "subject_token": id_token, "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "audience": audience, "resource": resource, "client_id": config.idp_client_id or "",
            })
        if response.status_code != 200:
            raise RuntimeError(f"the identity provider refused the token exchange ({response.status_code})")
        return str(response.json()["access_token"])

    assert config.client_id is not None and config.issuer is not None
    return _restoring(IdentityAssertionOAuthProvider)(
        server_url=url, storage=_Storage(file, None), client_id=config.client_id, client_secret=secret,
        issuer=expand_vars(config.issuer, environ), assertion_provider=fetch_id_jag, scope=config.scope,
        token_endpoint_auth_method=config.token_endpoint_auth_method)


_DONE_PAGE = (b"<!doctype html><title>pegboard</title><p>Signed in. You can close this window and return to "
              b"pegboard.</p>")


class LoopbackCallback:
    """The redirect's end: an HTTP listener on 127.0.0.1 that takes one
    ``/callback?code=...&state=...`` and hands it to the waiting flow."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        except OSError as exc:
            raise RuntimeError(f"cannot listen on 127.0.0.1:{self.port} for the sign-in redirect ({exc}); "
                               "set redirect_port in the server's [oauth] table to a free port") from None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            target = request.split(b" ", 2)[1].decode("ascii", "replace")
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path != "/callback" or not ({"code", "error"} & set(query)):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            body = _DONE_PAGE if "code" in query else (
                b"<!doctype html><title>pegboard</title><p>Sign-in failed: "
                + query.get("error", "").encode("ascii", "replace")[:200] + b"</p>")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            if self._result is not None and not self._result.done():
                if "code" in query:
                    self._result.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                                    iss=query.get("iss")))
                else:
                    self._result.set_exception(RuntimeError(
                        f"the authorization server refused: {query.get('error')} "
                        f"{query.get('error_description', '')}".strip()))
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, IndexError, OSError):
            return
        finally:
            try:
                await writer.drain()
                writer.close()
            except OSError:
                pass

    async def wait(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return await self._result

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None


async def authorize_for_scope(spec: ServerSpec, data_dir: Path, environ: dict[str, str], interaction: Interaction,
                              scope: str) -> None:
    """A step-up: authorize again for the scope already granted plus ``scope``.

    The SDK steps up by itself only inside the request that met the 403,
    where no person can be asked; here the same steps run on their own,
    from the metadata the last sign-in recorded (SDK internals, pinned by
    ``mcp<3``)."""
    from mcp.client.auth.utils import union_scopes

    provider: Any = build_auth(spec, data_dir, environ, interaction)
    await provider._initialize()
    context = provider.context
    if context.oauth_metadata is None:
        return  # nothing recorded to step up from: the connection's own 401 flow signs in
    granted = context.current_tokens.scope if context.current_tokens else None
    context.client_metadata.scope = union_scopes(union_scopes(context.client_metadata.scope, granted), scope)
    request = await provider._perform_authorization()
    async with httpx2.AsyncClient(timeout=30.0) as http:
        response = await http.send(request)
        await provider._handle_token_response(response)

"""Access tokens from an organisation's authorization server, checked by
``pegboard serve --http`` as an OAuth 2.1 resource server.

Two ways, as the issuer offers: a JWT access token is verified against the
issuer's published keys (JWKS, fetched when first needed, kept ten minutes,
fetched again for a key id not seen yet but at most every 30 s), with its
issuer, audience and lifetime; an opaque token is asked about at the
issuer's introspection endpoint (RFC 7662; a yes is kept at most 10 s, so
a token revoked there is refused soon after). Either way the audience must
be this server (``[plugins.mcp.serve.oauth] audience``, else its ``url``):
a token issued for another resource is refused, so a token a client got
for some other service cannot be replayed here.

Scopes map to pegboard's levels (``scopes``): a token gets the highest of
its scopes' levels, a ceiling on its sessions' mode.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from ._config import ServeOAuthConfig, expand_vars

__all__ = ["OAuthVerifier", "TokenClaims"]

JWKS_TTL_S = 600.0
JWKS_REFETCH_S = 30.0
INTROSPECTION_TTL_S = 10.0
MAX_CACHED = 10_000
HTTP_TIMEOUT_S = 10.0
LEVEL_ORDER = ("none", "read", "workspace", "unrestricted")


@dataclass(frozen=True)
class TokenClaims:
    """What a valid access token says about its holder."""

    subject: str
    scopes: tuple[str, ...]
    expires_at: float | None


class OAuthVerifier:
    """Checks one issuer's access tokens for one audience."""

    def __init__(self, config: ServeOAuthConfig, audience: str):
        self.config = config
        self.audience = config.audience or audience
        self._jwks: Any = None
        self._jwks_at = 0.0
        self._jwks_tried = 0.0
        self._introspected: dict[str, tuple[float, TokenClaims]] = {}

    # --- scopes -----------------------------------------------------------------

    def level_of(self, scopes: tuple[str, ...]) -> tuple[bool, str | None]:
        """(allowed, the level its scopes give): with no mapping, every token
        is allowed without a ceiling; with one, a token needs a mapped scope."""
        mapping = self.config.scopes
        if not mapping:
            return True, None
        found = [mapping[s] for s in scopes if s in mapping]
        if not found:
            return False, None
        return True, max(found, key=LEVEL_ORDER.index)

    def is_approver(self, scopes: tuple[str, ...]) -> bool:
        return self.config.approver_scope is not None and self.config.approver_scope in scopes

    # --- verifying ----------------------------------------------------------------

    async def verify(self, token: str) -> tuple[TokenClaims | None, str]:
        """The token's claims, else None and why (for the log; never the token)."""
        if self.config.jwks_url is not None:
            return await self._verify_jwt(token)
        return await self._introspect(token)

    async def _keys(self, force: bool) -> Any:
        import httpx
        import jwt

        now = time.monotonic()
        fresh = self._jwks is not None and now - self._jwks_at < JWKS_TTL_S
        if fresh and not force:
            return self._jwks
        if self._jwks is not None and now - self._jwks_tried < JWKS_REFETCH_S:
            return self._jwks  # fetched a moment ago: an unknown key id is not a reason to fetch again
        self._jwks_tried = now
        assert self.config.jwks_url is not None
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, follow_redirects=False) as http:
            response = await http.get(self.config.jwks_url, headers={"accept": "application/json"})
            response.raise_for_status()
            self._jwks = jwt.PyJWKSet.from_dict(response.json())
        self._jwks_at = now
        return self._jwks

    async def _key_for(self, kid: str | None) -> Any:
        from ._serve_credentials import Unavailable

        for force in (False, True):
            try:
                keys = await self._keys(force)
            except Exception as exc:
                raise Unavailable(f"the issuer's keys could not be fetched from {self.config.jwks_url}: "
                                  f"{type(exc).__name__}: {exc}") from None
            usable = [k for k in keys.keys if k.public_key_use in (None, "sig")]
            if kid is None and len(usable) == 1:
                return usable[0]
            match = next((k for k in usable if k.key_id == kid), None)
            if match is not None:
                return match
        raise LookupError(f"no key {kid!r} among the issuer's keys")

    async def _verify_jwt(self, token: str) -> tuple[TokenClaims | None, str]:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None, "not a JWT access token"
        if header.get("alg") not in self.config.algorithms:
            return None, f"token signed with {header.get('alg')!r}, not one of the accepted algorithms"
        try:
            key = await self._key_for(header.get("kid"))
        except LookupError as exc:
            return None, str(exc)
        try:
            claims = jwt.decode(token, key.key, algorithms=[header["alg"]], audience=self.audience,
                                issuer=self.config.issuer, leeway=self.config.leeway_s,
                                options={"require": ["exp", "iss", "aud"]})
        except jwt.InvalidAudienceError:
            return None, f"token not issued for this server (audience is not {self.audience})"
        except jwt.PyJWTError as exc:
            return None, f"token refused: {exc}"
        return _claims(claims), ""

    async def _introspect(self, token: str) -> tuple[TokenClaims | None, str]:
        import httpx

        key = hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()
        now = time.time()
        cached = self._introspected.get(key)
        if cached is not None and cached[0] > now:
            return cached[1], ""
        assert self.config.introspection_url is not None and self.config.introspection_client_id is not None
        secret = expand_vars(self.config.introspection_client_secret or "")
        try:
            async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, follow_redirects=False) as http:
                response = await http.post(self.config.introspection_url,
                                           data={"token": token, "token_type_hint": "access_token"},
                                           auth=(self.config.introspection_client_id, secret),
                                           headers={"accept": "application/json"})
                response.raise_for_status()
                found = response.json()
        except Exception as exc:
            from ._serve_credentials import Unavailable

            raise Unavailable(f"the introspection endpoint failed: {type(exc).__name__}: {exc}") from None
        if not isinstance(found, dict) or found.get("active") is not True:
            return None, "token not active at the issuer"
        if found.get("iss") is not None and found.get("iss") != self.config.issuer:
            return None, f"token from issuer {found.get('iss')!r}, not {self.config.issuer}"
        audiences = found.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else audiences if isinstance(audiences, list) else []
        if self.audience not in audiences:
            return None, f"token not issued for this server (audience is not {self.audience})"
        exp = found.get("exp")
        if isinstance(exp, (int, float)) and exp + self.config.leeway_s < now:
            return None, "token expired"
        claims = _claims(found)
        if len(self._introspected) >= MAX_CACHED:
            self._introspected.clear()
        until = now + INTROSPECTION_TTL_S
        if isinstance(exp, (int, float)):
            until = min(until, float(exp))
        self._introspected[key] = (until, claims)
        return claims, ""


def _claims(raw: dict[str, Any]) -> TokenClaims:
    scope = raw.get("scope", raw.get("scp", ""))
    scopes = tuple(scope.split()) if isinstance(scope, str) else tuple(str(s) for s in scope or ())
    subject = raw.get("sub") or raw.get("client_id") or raw.get("azp") or ""
    exp = raw.get("exp")
    return TokenClaims(subject=str(subject)[:200], scopes=scopes,
                       expires_at=float(exp) if isinstance(exp, (int, float)) else None)

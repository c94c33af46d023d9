"""Who is calling ``pegboard serve --http``: the bearer credential of a
request, checked in turn as the token serve was started with (the person
who started it), an API key the operator issued, or an access token from
the organisation's authorization server, and the ``pegboard.Client`` it
signs in as.

* the start token: the local user, no ceiling, an approver;
* an API key: its name, the level and approver right it was made with;
* an OAuth access token: its subject, the level its scopes map to, an
  approver when it carries the approver scope.
"""

from __future__ import annotations

import getpass
import hmac
import os
import time
from dataclasses import dataclass
from typing import Any

from pegboard import Client

from ._serve_keys import KEY_PREFIX

__all__ = ["Credentials", "Refused", "SignedIn", "Unavailable", "local_user"]


def local_user() -> str:
    """Who started serve: the start token's client."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container's user without a passwd entry
        return f"uid {os.getuid()}"


@dataclass(frozen=True)
class SignedIn:
    client: Client
    approver: bool
    key_id: str | None = None
    """The API key it signed in with (to check it again later), if any."""
    expires_at: float | None = None
    """When the credential stops working (a key's expiry, a token's ``exp``), if known."""


class Unavailable(Exception):
    """What checks a credential did not answer (the store, the issuer's keys or its introspection):
    the request is refused with 503, not as a wrong credential."""


@dataclass(frozen=True)
class Refused:
    status: int
    """401 (no credential, or not a valid one) or 403 (valid, but not enough: a scope)."""
    why: str
    """For the operator's log; never holds the credential."""
    sent: bool = True
    """Whether a credential was sent at all."""
    scope: str | None = None
    """403: the scopes that would do (RFC 6750's ``scope``)."""


class Credentials:
    """The ways in that this serve accepts (``token``: the start token, None
    with ``--no-auth``; ``keys``: the plugin's store when API keys are on;
    ``oauth``: an ``OAuthVerifier``)."""

    def __init__(self, *, token: str | None, owner: str, keys: Any = None, oauth: Any = None):
        self._token = token.encode("ascii") if token is not None else None
        self._owner = Client(owner, via="token")
        self.keys = keys
        self.oauth = oauth

    @property
    def methods(self) -> list[str]:
        return [name for name, on in (("token", self._token is not None), ("api keys", self.keys is not None),
                                      ("oauth", self.oauth is not None)) if on]

    @property
    def open(self) -> bool:
        """``--no-auth``: every request is the owner's."""
        return self._token is None and self.keys is None and self.oauth is None

    async def check(self, authorization: list[bytes]) -> SignedIn | Refused:
        """``authorization``: the request's Authorization header values."""
        if self.open:
            return SignedIn(self._owner, approver=True)
        if len(authorization) != 1:
            return Refused(401, "no bearer credential" if not authorization else "more than one Authorization header",
                           sent=bool(authorization))
        scheme, _, raw = authorization[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return Refused(401, "not a bearer credential")
        credential = raw.strip()
        if self._token is not None and hmac.compare_digest(credential, self._token):
            return SignedIn(self._owner, approver=True)
        try:
            text = credential.decode("ascii")
        except UnicodeDecodeError:
            return Refused(401, "a credential that is not ASCII")
        if text.startswith(KEY_PREFIX) and self.keys is not None:
            return await self._key(text)
        if self.oauth is not None and not text.startswith(KEY_PREFIX):
            return await self._access_token(text)
        return Refused(401, "wrong token" if not text.startswith(KEY_PREFIX) else "API keys are not accepted here")

    async def _key(self, text: str) -> SignedIn | Refused:
        from ._serve_keys import find_key

        now = time.time()
        try:
            key, why = await self.keys.run(lambda conn: find_key(conn, text, now), read_only=True)
        except Exception as exc:
            raise Unavailable(f"the store did not answer: {self.keys.describe_error(exc)}") from None
        if key is None:
            return Refused(401, why)
        return SignedIn(Client(key.name, via="api key", level=key.level), approver=key.approver, key_id=key.id,
                        expires_at=key.expires_at)

    async def _access_token(self, text: str) -> SignedIn | Refused:
        claims, why = await self.oauth.verify(text)
        if claims is None:
            return Refused(401, why)
        if not claims.subject:
            return Refused(401, "the access token names no subject (sub, client_id)")
        allowed, level = self.oauth.level_of(claims.scopes)
        if not allowed:
            return Refused(403, f"{claims.subject}: none of the token's scopes gives a level here",
                           scope=" ".join(sorted(self.oauth.config.scopes)))
        return SignedIn(Client(claims.subject, via="oauth", level=level, scopes=claims.scopes),
                        approver=self.oauth.is_approver(claims.scopes), expires_at=claims.expires_at)

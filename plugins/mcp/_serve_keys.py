"""API keys for ``pegboard serve --http``: made by the operator
(``pegboard serve keys add NAME``), shown once, kept as a SHA-256 of their
secret in the store, each with the client identity its requests carry, the
level it allows, whether it may approve, and an optional expiry.

A key reads ``pbk_<id>_<secret>``: the id finds its row (one lookup, no
scan), the secret is 32 random bytes compared by hash in constant time. A
plain hash is enough for a random secret of that size (nothing to guess a
word list against); a slow password hash would only cost every request.
Each request looks the key up again, so a revoked key is refused from the
next request on, by every replica sharing the store.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

__all__ = ["ApiKey", "KEY_PREFIX", "find_key", "list_keys", "make_key", "parse_expiry", "revoke_keys"]

KEY_PREFIX = "pbk_"
_KEY = re.compile(r"^pbk_([0-9a-f]{16})_([A-Za-z0-9_-]{40,64})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,199}$")
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True)
class ApiKey:
    """A key's row, without its secret."""

    id: str
    name: str
    level: str | None
    approver: bool
    created_at: float
    expires_at: float | None
    revoked_at: float | None

    def state(self, now: float | None = None) -> str:
        """``active``, ``expired`` or ``revoked``."""
        now = time.time() if now is None else now
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "level": self.level, "approver": self.approver,
                "created_at": self.created_at, "expires_at": self.expires_at, "revoked_at": self.revoked_at,
                "state": self.state()}


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{name!r}: a key's name is the client identity its requests carry (the audit log's "
                         "client, [clients.<name>] in the config): letters, digits and . _ @ + -, starting with "
                         "a letter or digit, at most 200 characters")
    return name


def parse_expiry(text: str, now: float | None = None) -> float:
    """``30d``, ``12h``, ``90m``, ``2w``, or a date (``2026-12-31``, UTC midnight) or ISO time."""
    now = time.time() if now is None else now
    span = _SPAN.match(text.strip())
    if span:
        value = float(span.group(1)) * _UNIT_S[span.group(2)]
        if value <= 0:
            raise ValueError(f"--expires {text!r}: a key must live a while")
        return now + value
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--expires {text!r}: expected a span (30d, 12h, 90m, 2w) or a date (2026-12-31) "
                         "or time (2026-12-31T18:00:00+00:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    stamp = when.timestamp()
    if stamp <= now:
        raise ValueError(f"--expires {text!r} is in the past")
    return stamp


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _row(row: Any) -> ApiKey:
    return ApiKey(id=row.id, name=row.name, level=row.level, approver=bool(row.approver), created_at=row.created_at,
                  expires_at=row.expires_at, revoked_at=row.revoked_at)


def make_key(store: Any, name: str, *, level: str | None, approver: bool, expires_at: float | None) -> tuple[str, ApiKey]:
    """A new key: (the key itself, to show once; its row)."""
    from ._serve_tables import keys

    check_name(name)
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    row = ApiKey(id=key_id, name=name, level=level, approver=approver, created_at=time.time(),
                 expires_at=expires_at, revoked_at=None)
    with store.begin() as conn:
        conn.execute(keys.insert().values(id=row.id, name=row.name, secret_sha256=_digest(secret), level=row.level,
                                          approver=row.approver, created_at=row.created_at,
                                          expires_at=row.expires_at, revoked_at=None))
    return f"{KEY_PREFIX}{key_id}_{secret}", row


def list_keys(store: Any) -> list[ApiKey]:
    from sqlalchemy import select

    from ._serve_tables import keys

    with store.begin(read_only=True) as conn:
        return [_row(r) for r in conn.execute(select(keys).order_by(keys.c.name, keys.c.created_at))]


def revoke_keys(store: Any, name_or_id: str) -> list[ApiKey]:
    """Revoke the key with this id, or every active key with this name; the keys revoked."""
    from sqlalchemy import or_, select, update

    from ._serve_tables import keys

    now = time.time()
    with store.begin() as conn:
        found = [_row(r) for r in conn.execute(select(keys).where(
            or_(keys.c.id == name_or_id, keys.c.name == name_or_id), keys.c.revoked_at.is_(None)))]
        if found:
            conn.execute(update(keys).where(keys.c.id.in_([k.id for k in found])).values(revoked_at=now))
    return found


def find_key(conn: Any, presented: str, now: float) -> tuple[ApiKey | None, str]:
    """The active key ``presented`` is, else None and why (for the log, never the key)."""
    from sqlalchemy import select

    from ._serve_tables import keys

    parts = _KEY.match(presented)
    if parts is None:
        return None, "not an API key"
    key_id, secret = parts.groups()
    row = conn.execute(select(keys).where(keys.c.id == key_id)).first()
    # Compared even when there is no row, so that a missing id and a wrong secret take as long.
    expected = row.secret_sha256 if row is not None else "0" * 64
    if not hmac.compare_digest(_digest(secret), expected) or row is None:
        return None, "unknown API key"
    key = _row(row)
    state = key.state(now)
    if state != "active":
        return None, f"{state} API key {key.id} ({key.name})"
    return key, ""

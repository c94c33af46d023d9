"""Who a session's calls are made for, when a host serves several people.

A host that serves more than one client (``pegboard serve`` with signed-in
clients, a web application) names the client of each session with a
``Client``; the permission engine, every vote (``request.client``), the
audit log and the pending calls see it. ``[clients.<id>]`` in the
operator's config sets a client's mode and rules (docs/permissions.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .levels import LEVELS, Level

__all__ = ["Client", "MAX_CLIENT_ID"]

MAX_CLIENT_ID = 200
"""The longest client id kept (the audit log's and the pending calls' column)."""


@dataclass(frozen=True, slots=True)
class Client:
    """A signed-in client: ``Toolbox.session(client=...)``, ``session.client``,
    ``request.client`` in a vote."""

    id: str
    """Who it is, as the operator names it in ``[clients.<id>]``: an API key's name, an OAuth
    token's subject. Kept in the audit log and with pending calls."""
    via: str = "host"
    """How it signed in (``"api key"``, ``"oauth"``, ``"token"``, or the host's own word)."""
    level: Level | None = None
    """The most its credential allows (an API key's level, an OAuth scope's): the session's mode
    is clamped under it. None: no limit beyond the operator's."""
    scopes: tuple[str, ...] = ()
    """The scopes its credential carries (OAuth), for votes that care."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip() or len(self.id) > MAX_CLIENT_ID:
            raise ValueError(f"a client id is a non-empty string of at most {MAX_CLIENT_ID} characters, "
                             f"not {self.id!r}")
        if self.level is not None and self.level not in LEVELS:
            raise ValueError(f"unknown level {self.level!r}; expected one of: {', '.join(LEVELS)}")
        object.__setattr__(self, "scopes", tuple(self.scopes))  # frozen: set once, here



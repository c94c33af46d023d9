"""Who a session's calls are made for, when a host serves several people.

A host that serves more than one client (``pegboard serve`` with signed-in
clients, a web application) names the client of each session with a
``Client``; the permission engine, every vote (``request.client``), the
audit log and the pending calls see it. ``[clients.<id>]`` in the
operator's config sets a client's mode and rules (docs/permissions.md).
"""

from __future__ import annotations

from ._levels import LEVELS, Level
from ._records import record

__all__ = ["Client", "MAX_CLIENT_ID"]

MAX_CLIENT_ID = 200
"""The longest client id kept (the audit log's and the pending calls' column)."""


@record(frozen=True)
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

    def __init__(self, id: str, via: str = "host", level: Level | None = None, scopes: tuple[str, ...] = ()) -> None:
        if not isinstance(id, str) or not id.strip() or len(id) > MAX_CLIENT_ID:
            raise ValueError(f"a client id is a non-empty string of at most {MAX_CLIENT_ID} characters, "
                             f"not {id!r}")
        if level is not None and level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; expected one of: {', '.join(LEVELS)}")
        _set = object.__setattr__
        _set(self, "id", id)
        _set(self, "via", via)
        _set(self, "level", level)
        _set(self, "scopes", tuple(scopes))

"""The plugin API's version, which a plugin can require.

``API_VERSION`` is ``"major.minor"``: the minor number grows when the public
API gains something (a name, a hook, a hook argument), the major one when
something a plugin may rely on changes or goes (after a release of
deprecation warnings). A plugin says what it needs with a module attribute,
``PEGBOARD_API = "1.0"``: it loads on any 1.x from 1.0 on; elsewhere it is
reported as failed, with both versions, and none of its hooks registered.
"""

from __future__ import annotations

__all__ = ["API_VERSION", "api_mismatch"]

API_VERSION = "1.1"
"""The plugin API's version, ``"major.minor"``. A plugin that sets
``PEGBOARD_API = "1.1"`` loads on any 1.x from 1.1 on and is reported as
failed elsewhere, with both versions; CHANGELOG.md says what each added."""


def _parse(text: str) -> tuple[int, int]:
    major, _, minor = text.strip().partition(".")
    return int(major), int(minor or 0)


def api_mismatch(required: object) -> str | None:
    """Why a plugin asking for ``required`` cannot load here, or None."""
    if not isinstance(required, str):
        return f"PEGBOARD_API must be a string such as '1.0', not {required!r}"
    try:
        want = _parse(required)
    except ValueError:
        return f"PEGBOARD_API = {required!r} is not a version such as '1.0'"
    have = _parse(API_VERSION)
    if want[0] != have[0] or want[1] > have[1]:
        return f"it requires plugin API {required}; this pegboard has plugin API {API_VERSION}"
    return None

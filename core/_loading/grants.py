"""``granted.toml``: rules remembered from a person's approvals; and
``update_toml``, the locked read-change-write of the small TOML files
pegboard keeps for the person (grants, trusted folders); ``edit_toml``, the
same for a file the person writes too (``config set``, ``permissions add``),
keeping its comments and layout."""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._util.atomic import atomic_write
from .._util.path_facts import resolve_path

__all__ = ["append_grant", "edit_toml", "update_toml"]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Held while ``path`` is read, changed and written: a lock file beside
    it, so that two processes changing it at once both keep their change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def edit_toml(path: Path, change: Callable[[Any], bool]) -> None:
    """Read ``path`` (empty when missing) as a tomlkit document, let
    ``change`` edit it in place (False: leave the file as it is; what it
    raises leaves it too), and write it atomically, its comments and
    layout kept. A file that does not parse raises ``ValueError`` naming it."""
    import tomlkit  # only for these commands
    from tomlkit.exceptions import ParseError

    with _locked(path):
        try:
            document = tomlkit.parse(path.read_text(encoding="utf-8") if path.is_file() else "")
        except (ParseError, UnicodeDecodeError, RecursionError) as exc:
            raise ValueError(f"{path}: not valid TOML ({exc}); fix it by hand first") from None
        if change(document):
            atomic_write(resolve_path(path, path.parent), tomlkit.dumps(document))

_GRANT_KEYS = ("allow", "ask", "deny")


def update_toml(path: Path, change: Callable[[dict[str, Any]], dict[str, Any] | None], header: str) -> None:
    """Read ``path`` (empty when missing), let ``change`` return the new
    content (None: leave the file as it is), write it atomically with a
    real TOML writer. Under a lock beside the file, so that two processes
    changing it at once both keep their change. A file that does not parse
    raises ``ValueError`` naming it, and is left alone."""
    # Imported by the writes that need them: the permission engine imports
    # this module at every start-up, and most start-ups write no grant.
    import tomllib

    import tomli_w

    with _locked(path):
        data: dict[str, Any] = {}
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
                raise ValueError(f"{path}: not valid TOML ({exc}); fix or remove it by hand") from None
        new = change(data)
        if new is None:
            return
        body = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + tomli_w.dumps(new)
        atomic_write(resolve_path(path, path.parent), body)


def append_grant(path: Path, rule_text: str, header: str = "") -> None:
    """Add an allow rule to ``granted.toml`` (created if missing)."""

    def add(data: dict[str, Any]) -> dict[str, Any] | None:
        perms = data.get("permissions", {})
        extra = set(data) - {"permissions"} | (set(perms) - set(_GRANT_KEYS) if isinstance(perms, dict) else set())
        if extra:
            raise ValueError(f"{path} holds other settings ({', '.join(sorted(extra))}); "
                             "add the rule to [permissions] allow by hand")
        lists = {k: [str(r) for r in perms.get(k, [])] for k in _GRANT_KEYS}
        if rule_text in lists["allow"]:
            return None
        lists["allow"].append(rule_text)
        return {"permissions": {k: v for k, v in lists.items() if v or k == "allow"}}

    intro = "Rules remembered from approvals (pegboard rewrites this file). Edit freely."
    update_toml(path, add, f"{intro}\n{header}" if header else intro)

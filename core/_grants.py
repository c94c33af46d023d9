"""``granted.toml``: rules remembered from a person's approvals."""

from __future__ import annotations

import fcntl
import json
import os
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["append_grant"]

_GRANT_KEYS = ("allow", "ask", "deny")


def append_grant(path: Path, rule_text: str) -> None:
    """Add an allow rule to ``granted.toml`` (created if missing), under a
    lock so that two sessions remembering at once both keep their rule."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data: dict[str, Any] = {}
        if path.is_file():
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        perms = data.get("permissions", {})
        extra = set(data) - {"permissions"} | (set(perms) - set(_GRANT_KEYS) if isinstance(perms, dict) else set())
        if extra:
            raise ValueError(f"{path} holds other settings ({', '.join(sorted(extra))}); "
                             "add the rule to [permissions] allow by hand")
        lists = {k: [str(r) for r in perms.get(k, [])] for k in _GRANT_KEYS}
        if rule_text in lists["allow"]:
            return
        lists["allow"].append(rule_text)
        body = "# Rules remembered from approvals (pegboard rewrites this file). Edit freely.\n[permissions]\n"
        for key in _GRANT_KEYS:
            if lists[key] or key == "allow":
                body += f"{key} = [\n" + "".join(f"    {json.dumps(r)},\n" for r in lists[key]) + "]\n"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(body, encoding="utf-8")  # a JSON string is a valid TOML basic string
        os.replace(tmp, path)

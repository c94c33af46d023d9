"""Which skill is active in a session, and the pre-approvals it holds.

One skill is active at a time. Starting a skill revokes the previous skill's
grants before adding its own, so pre-approvals never pile up over a long
session and "what is pre-approved now" always has a one-skill answer. The
active skill is also the only one whose scripts ``run_skill_script`` runs.
The grants end when another skill is started (or the same one again, which
re-reads its ``allowed-tools``), when the active skill is rewritten or deleted
through SkillWrite/SkillDelete, and when the session closes.
"""

from __future__ import annotations

import os
from collections.abc import Collection, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._skill import Skill, SourceKind

__all__ = ["Active", "activate", "active", "deactivate"]

_KEY = "active"


@dataclass
class Active:
    skill: Skill
    # Resolved once, at activation: scripts are confined to this folder even if
    # the skill's folder is swapped for a symlink afterwards.
    real_base: Path
    grants: list[Any] = field(default_factory=list)
    granted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def revoke(self) -> None:
        for grant in self.grants:
            grant.revoke()
        self.grants.clear()


def active(state: MutableMapping[str, Any]) -> Active | None:
    value = state.get(_KEY)
    return value if isinstance(value, Active) else None


def deactivate(state: MutableMapping[str, Any]) -> Active | None:
    """End the active skill (revoking its grants); return it, if there was one."""
    current = state.pop(_KEY, None)
    if isinstance(current, Active):
        current.revoke()
        return current
    return None


def activate(session: Any, state: MutableMapping[str, Any], skill: Skill,
             preapprove: Collection[SourceKind], plugin: str) -> tuple[Active, Active | None]:
    """Make ``skill`` the active one; returns it and the one it replaced.

    Each ``allowed-tools`` rule becomes a session allow grant with source
    ``skill:<name>``. A rule is skipped (and said so) when the operator does
    not take pre-approvals from this skill's source, when it names a tool
    this toolbox does not have with a specifier (the core would otherwise fall
    back to matching the whole tool), or when its plugin rejects the specifier.
    """
    previous = deactivate(state)
    current = Active(skill, Path(os.path.realpath(skill.base_dir)))
    state[_KEY] = current
    if skill.allowed_tools and skill.source not in preapprove:
        current.skipped.extend(
            f"{text} (pre-approvals from {skill.source} skills are off: [plugins.{plugin}] preapprove)"
            for text in skill.allowed_tools)
        return current, previous
    for text in skill.allowed_tools:
        try:
            grant = session.grant(text, "allow", source=f"skill:{skill.name}")
        except ValueError as exc:
            current.skipped.append(f"{text} ({exc})")
            continue
        current.grants.append(grant)
        current.granted.append(text)
    return current, previous

"""Ready-made rule matchers a plugin can return from ``pegboard_rule_matcher``."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._decisions import PermissionRequest, Rule

__all__ = ["InputFieldMatcher"]


class InputFieldMatcher:
    """A ready matcher for rules naming one input field's value, such as
    ``Agent(Explore)`` (field ``subagent_type``) or ``Skill(pdf-*)``:
    the specifier is a shell-style pattern matched against the whole value.

    A call without the field (or with a non-string one) matches only deny
    and ask rules: an input the rule cannot read must not be allowed by it.
    """

    __slots__ = ("field", "pattern", "behavior")

    def __init__(self, rule: Rule, field: str) -> None:
        if rule.specifier is None:
            raise ValueError(f"{rule.text}: expected {rule.tool}(<{field}>)")
        self.field = field
        self.pattern = rule.specifier.strip()
        self.behavior = rule.behavior

    def matches(self, request: PermissionRequest) -> bool:
        value = request.input.get(self.field)
        if not isinstance(value, str):
            return self.behavior != "allow"
        return fnmatch.fnmatchcase(value, self.pattern)

    def describe(self) -> str:
        return f"calls whose {self.field} matches {self.pattern!r}"

"""Ready-made rule matchers a plugin can return from ``pegboard_rule_matcher``."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .decisions import PermissionRequest, Rule, ToolNamespace

__all__ = ["InputFieldMatcher", "NameMatcher"]


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
        """The input field whose value the rule names."""
        self.pattern = rule.specifier.strip()
        """The specifier, a shell-style pattern (``fnmatch``, case-sensitive) for the whole value."""
        self.behavior = rule.behavior
        """The rule's behavior, which decides what a call without the field matches."""

    def matches(self, request: PermissionRequest) -> bool:
        """Whether the field's value matches the pattern (a call without it: deny and ask rules only)."""
        value = request.input.get(self.field)
        if not isinstance(value, str):
            return self.behavior != "allow"
        return fnmatch.fnmatchcase(value, self.pattern)

    def describe(self) -> str:
        """``"calls whose subagent_type matches 'Explore'"``, for the rule's preview."""
        return f"calls whose {self.field} matches {self.pattern!r}"


class NameMatcher:
    """A rule without a specifier: every call of the tool it names, of every
    tool of a group when it names one (``mcp__server``: ``namespace`` is the
    ``ToolNamespace`` a plugin declared), or of a tool that declares the
    name in ``metadata["rule_names"]`` (the engine decides which declared
    names count; it consults a rule only for a call it covers)."""

    __slots__ = ("name", "namespace")

    def __init__(self, name: str, namespace: ToolNamespace | None = None):
        self.name = name
        self.namespace = namespace

    def matches(self, request: PermissionRequest) -> bool:
        if self.covers(request.tool.name):
            return True
        declared = request.tool.metadata.get("rule_names", ())
        return isinstance(declared, (list, tuple)) and self.name in declared

    def covers(self, name: str) -> bool:
        return name == self.name or (self.namespace is not None and name.startswith(self.name + "__"))

    def describe(self) -> str:
        if self.namespace is not None:
            group = self.namespace.group_named(self.name)
            return f"every call of every tool of {self.namespace.label} {group!r}"
        return f"every call of {self.name}, whatever its input"

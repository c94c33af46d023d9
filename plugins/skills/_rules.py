"""Permission rule specifiers for the skills plugin's tools.

* ``Skill(name)``, ``SkillRead(name)``, ``SkillWrite(name)``,
  ``SkillDelete(name)``: the skill called ``name``; a trailing ``*`` makes it
  a prefix (``Skill(deploy-*)``; Claude Code's ``Skill(deploy:*)`` and
  ``Skill(deploy *)`` are read the same way).
* ``run_skill_script(skill)``: any script of that skill;
  ``run_skill_script(skill:scripts/check.sh)``: that script only;
  ``run_skill_script(skill:scripts/*)``: scripts under a folder.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from pegboard import PermissionRequest, Rule

__all__ = ["NAME_KEYS", "ScriptMatcher", "SkillNameMatcher", "compile_rule"]

# Which input field names the skill, per tool.
NAME_KEYS = {"Skill": "skill", "SkillRead": "name", "SkillWrite": "name", "SkillDelete": "name",
             "run_skill_script": "skill"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _name_pattern(spec: str, rule: Rule) -> tuple[str, bool]:
    text = spec.strip()
    prefix = False
    for tail in (":*", " *", "*"):
        if text.endswith(tail):
            text, prefix = text[: -len(tail)].strip(), True
            break
    if prefix and not text:
        return "", True  # Skill(*): every skill
    if not _NAME.match(text):
        raise ValueError(f"{rule.text}: {text!r} is not a skill name (letters, digits, '-', '_', '.'), "
                         "optionally followed by '*'")
    return text, prefix


@dataclass(frozen=True)
class SkillNameMatcher:
    key: str
    name: str
    prefix: bool

    def matches(self, request: PermissionRequest) -> bool:
        value = request.input.get(self.key)
        if not isinstance(value, str):
            return False
        value = value.strip().removeprefix("/")
        return value.startswith(self.name) if self.prefix else value == self.name


@dataclass(frozen=True)
class ScriptMatcher:
    skill: SkillNameMatcher
    relpath: str | None
    folder: bool

    def matches(self, request: PermissionRequest) -> bool:
        if not self.skill.matches(request):
            return False
        if self.relpath is None:
            return True
        value = request.input.get("relpath")
        if not isinstance(value, str):
            return False
        norm = posixpath.normpath(value)
        if self.folder:
            return norm.startswith(self.relpath + "/")
        return norm == self.relpath


def compile_rule(rule: Rule) -> Any:
    """A matcher for a rule on one of our tools, or None for anyone else's."""
    key = NAME_KEYS.get(rule.tool)
    if key is None or rule.specifier is None:
        return None
    if rule.tool != "run_skill_script":
        name, prefix = _name_pattern(rule.specifier, rule)
        return SkillNameMatcher(key, name, prefix)
    skill_part, sep, path_part = rule.specifier.partition(":")
    if sep and path_part.strip() == "*":
        sep, path_part = "", ""  # run_skill_script(name:*) is the whole skill
    name, prefix = _name_pattern(skill_part, rule)
    if not sep:
        return ScriptMatcher(SkillNameMatcher(key, name, prefix), None, False)
    path = path_part.strip()
    folder = path.endswith("/*")
    if folder:
        path = path[:-2]
    norm = posixpath.normpath(path) if path else ""
    if not norm or norm.startswith(("/", "..")) or "*" in norm:
        raise ValueError(f"{rule.text}: {path_part!r} must be a path inside the skill's folder "
                         "(scripts/check.sh) or a folder followed by /* (scripts/*)")
    return ScriptMatcher(SkillNameMatcher(key, name, prefix), norm, folder)

"""What a rule would allow: the preview shown with an ask's "always allow".

For a rule whose matcher has ``path_input(path)`` (the fs plugin's path
rules: the input of a call of the rule's tool on ``path``, or None) it
counts the files in the working directories the rule covers now and names
a few; for a rule on a whole tool or on a group of a declared namespace
(an MCP server's tools), it says so and lists the tools; otherwise the
matcher's ``describe()`` speaks for it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..._api.decisions import CompiledRule, PermissionRequest, Rule

if TYPE_CHECKING:
    from .engine import PermissionEngine
    from ..._api.plugin_session import PluginSession

__all__ = ["PREVIEW_FILE_LIMIT", "preview"]

PREVIEW_FILE_LIMIT = 5_000  # files looked at when previewing a path rule


def preview(engine: PermissionEngine, rule_text: str, session: PluginSession | None = None) -> str:
    """A sentence for the person deciding whether to "always allow" ``rule_text``."""
    try:
        rule = Rule.parse(rule_text, "allow", "preview", engine.settings.root)
        inactive_before = len(engine.inactive)
        compiled = engine.compile(rule, "preview")
        del engine.inactive[inactive_before:]
    except ValueError as exc:
        return f"{rule_text} is not a valid rule: {exc}"
    if compiled is None:
        return f"{rule.text}: no loaded plugin provides {rule.tool}, so it would allow nothing now"
    names = engine.name_matcher(rule.tool)
    tools = [n for n in engine.toolbox.tools if names.covers(n)]
    parts = [f"{rule.text} would allow "]
    describe = getattr(compiled.matcher, "describe", None)
    if rule.specifier is None:
        parts.append(names.describe())
        if len(tools) > 1 or (tools and tools[0] != rule.tool):
            parts.append(f" ({len(tools)} tools: {', '.join(tools[:8])}{', ...' if len(tools) > 8 else ''})")
    else:
        counted = _preview_paths(engine, compiled, session) if session is not None else None
        if counted is not None:
            parts.append(counted)
        elif callable(describe):
            try:
                parts.append(f"{rule.tool} {describe()}")
            except Exception:  # a plugin's describe() is advice: its failure falls back to the rule's text
                parts.append(f"calls of {rule.tool} matching {rule.specifier!r}")
        else:
            parts.append(f"calls of {rule.tool} matching {rule.specifier!r}")
    parts.append("; deny rules and protected paths still apply.")
    return "".join(parts)


def _preview_paths(engine: PermissionEngine, compiled: CompiledRule, session: PluginSession) -> str | None:
    tool = engine.toolbox.tools.get(compiled.rule.tool)
    path_input = getattr(compiled.matcher, "path_input", None)
    if tool is None or not callable(path_input):
        return None
    try:
        if not session.working_dirs or path_input(str(session.working_dirs[0])) is None:
            return None  # the matcher's rule is not about files
    except Exception:  # a plugin's preview helper is advice: its failure means no count
        return None
    hits: list[str] = []
    seen = 0
    for base in session.working_dirs:
        for folder, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                seen += 1
                if seen > PREVIEW_FILE_LIMIT:
                    break
                path = os.path.join(folder, name)
                try:
                    probe = PermissionRequest(tool=tool, input=path_input(path), session=session,
                                              policy=session.policy)
                    if compiled.matcher.matches(probe):
                        hits.append(os.path.relpath(path, base))
                except Exception:  # a file the matcher cannot judge is left out of the count
                    continue
            if seen > PREVIEW_FILE_LIMIT:
                break  # a large tree: stop walking, not only counting
        if seen > PREVIEW_FILE_LIMIT:
            break
    shown = ", ".join(hits[:5]) + (", ..." if len(hits) > 5 else "")
    capped = f" (looked at the first {PREVIEW_FILE_LIMIT:,} files)" if seen > PREVIEW_FILE_LIMIT else ""
    if not hits:
        return (f"{tool.name} on paths matching {compiled.rule.specifier!r}: no file in the working "
                f"directories matches now{capped}, but files created there later would")
    return (f"{tool.name} on {len(hits)} file{'s' if len(hits) != 1 else ''} in the working directories "
            f"({shown}){capped}, and on any file matching {compiled.rule.specifier!r} later")

"""docs/config.md lists every user-scope option of the core and the built-in
plugins, and docs/security.md keeps its promises' headings."""

from __future__ import annotations

import re
from pathlib import Path

from pegboard._loading.config import CoreConfig, format_key
from pegboard._loading.scope import user_scope_paths

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _models() -> dict[tuple[str, ...], type]:
    from pegboard.plugins.fs import FsConfig
    from pegboard.plugins.mcp._config import McpConfig
    from pegboard.plugins.shell import ShellConfig
    from pegboard.plugins.skills import SkillsConfig
    from pegboard.plugins.subtasks import SubtasksConfig
    from pegboard.plugins.web import WebConfig

    return {(): CoreConfig, ("plugins", "fs"): FsConfig, ("plugins", "shell"): ShellConfig,
            ("plugins", "web"): WebConfig, ("plugins", "skills"): SkillsConfig, ("plugins", "mcp"): McpConfig,
            ("plugins", "subtasks"): SubtasksConfig}


def marked() -> set[str]:
    keys = set()
    for prefix, model in _models().items():
        for path in user_scope_paths(model):
            full = (*prefix, *path)
            keys.add(f"[{full[0]}] (every key)" if len(full) == 1 else format_key(full))
    return keys


def listed() -> set[str]:
    text = (DOCS / "config.md").read_text(encoding="utf-8")
    table = text.split("<!-- user-scope options:")[1].split("\n\n")[0]
    return {m.replace("`", "") for m in re.findall(r"^\| (`[^|]+?`(?: \(every key\))?) \|", table, re.M)} - {"option"}


def test_config_md_lists_every_user_scope_option_and_no_other() -> None:
    assert marked(), "the built-in plugins mark their user-scope options"
    assert listed() == marked()


def test_security_md_has_the_trust_model_the_table_and_the_box() -> None:
    text = (DOCS / "security.md").read_text(encoding="utf-8")
    for heading in ("## The trust model", "## What a checkout can and cannot do",
                    "### What an untrusted folder's files can do", "### What a trusted folder's files can do",
                    "## What the box narrows", "## Side by side"):
        assert heading in text
    assert "| | pegboard | Claude Code | Codex CLI | Gemini CLI |" in text
    for key in marked():
        whole = key.removesuffix(" (every key)")
        assert (f"`{whole}`" if whole != key else key.split("] ")[1]) in text, key

"""The fs plugin: Read, Write, Edit, NotebookEdit, Glob and Grep.

Kept light on purpose (the entry point is imported to list tools): handlers
and input models are named as strings and imported on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pegboard import Tool, hookimpl

from ._config import FsConfig

if TYPE_CHECKING:
    from pegboard import RuleSamples
    from collections.abc import Callable

    import click

    from pegboard import PermissionRequest, PluginContext, Rule, PluginSession, Vote

__all__ = ["FsConfig", "list_checkpoints", "restore_checkpoint"]

PEGBOARD_API = "1.1"
# Every tool name this plugin may register: reserved for it even while it is off (docs/plugins.md).
PEGBOARD_TOOL_NAMES = ("Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep")


def list_checkpoints(session_id: str) -> list[Any]:
    """The checkpoints a session's writes left, oldest first (``Checkpoint`` objects)."""
    from ._checkpoints import list_checkpoints as _list

    return _list(session_id)


def restore_checkpoint(session_id: str, checkpoint: int, *, only: Path | None = None) -> list[str]:
    """Put the session's files back as they were before ``checkpoint``; later writes are undone too."""
    from ._checkpoints import restore_checkpoint as _restore

    return _restore(session_id, checkpoint, only=only)

_P = "pegboard.plugins.fs"
_TOOLS: tuple[tuple[str, str, str, bool, str, str], ...] = (
    # name, handler, input model, read_only, loading, level
    ("Read", "_read:read", "ReadInput", True, "always", "read"),
    ("Write", "_write:write", "WriteInput", False, "always", "workspace"),
    ("Edit", "_write:edit", "EditInput", False, "always", "workspace"),
    ("NotebookEdit", "_notebook:notebook_edit", "NotebookEditInput", False, "deferred", "workspace"),
    ("Glob", "_search:glob", "GlobInput", True, "always", "read"),
    ("Grep", "_search:grep", "GrepInput", True, "always", "read"),
)
# the rule names whose specifiers also cover a tool (Claude Code: Edit rules cover
# every writer, Read rules every reader); the core consults them when it supports it
# Read's model is apart from the others' (a decision on a Read defines it alone).
_MODEL_MODULES = {"ReadInput": "_models_read"}
_RULE_NAMES = {"Write": ("Edit",), "NotebookEdit": ("Edit",), "Glob": ("Read",), "Grep": ("Read",)}


@hookimpl
def pegboard_add_hooks(add: Callable[[object], None]) -> None:
    from . import _hookspecs

    add(_hookspecs)


@hookimpl
def pegboard_config_model() -> type[FsConfig]:
    return FsConfig


@hookimpl
def pegboard_register_tools(register: Callable[[Tool], None], config: Any) -> None:
    for name, handler, model, read_only, loading, level in _TOOLS:
        module, _, fn = handler.partition(":")
        register(Tool(
            name=name,
            handler=f"{_P}.{module}:{fn}",
            input_model=f"{_P}.{_MODEL_MODULES.get(model, '_models')}:{model}",
            read_only=read_only,
            loading=loading,  # type: ignore[arg-type]
            permission=level,  # type: ignore[arg-type]
            metadata={"rule_names": _RULE_NAMES.get(name, ())},
            vote=f"{_P}._vote:vote",  # imported at the first decision, not with the plugin
        ))


@hookimpl
def pegboard_rule_matcher(rule: Rule, context: PluginContext) -> Any:
    from ._vote import COVERS, FsRuleMatcher

    if rule.tool not in COVERS or rule.specifier is None:
        return None
    return FsRuleMatcher(rule, context.root)


@hookimpl
def pegboard_file_read(session: PluginSession, path: Path, source: str, context: PluginContext) -> None:
    """Another plugin (the shell's cat/head/sed -n) showed a file in full: it counts as read."""
    import os

    from ._tracking import tracker

    real = Path(os.path.realpath(path if Path(path).is_absolute() else session.root / path))
    tracker(session.plugin_state(context.name)).record(real)


@hookimpl
def pegboard_doctor(config: Any) -> list[Any]:
    """Say which Grep/Glob engine runs, since results are the same but speed is not."""
    import shutil

    from pegboard import Check

    cfg = config if isinstance(config, FsConfig) else FsConfig()
    if cfg.search_backend == "python":
        return [Check("search engine", "ok", "Python engine (search_backend = 'python')")]
    rg = shutil.which(cfg.rg_path or "rg")
    if rg is not None:
        return [Check("search engine", "ok", f"ripgrep at {rg}")]
    status = "fail" if cfg.search_backend == "rg" else "warn"
    return [Check("search engine", status,  # type: ignore[arg-type]
                  "ripgrep not found; Grep and Glob use the slower Python engine (install ripgrep)")]


@hookimpl
def pegboard_register_commands(cli: click.Group) -> None:
    from ._cli import checkpoints

    cli.add_command(checkpoints)


@hookimpl
def pegboard_rule_samples() -> RuleSamples:
    """For ``pegboard plugins check fs``: path rules (relative, absolute,
    home, globs) and calls inside and outside them."""
    from pegboard import RuleSamples

    edit = {"old_string": "a", "new_string": "b"}
    return RuleSamples(
        rules=["Read(src/**)", "Read(*.md)", "Read(//etc/**)", "Read(~/notes/*)", "Read(src/a.py)",
               "Edit(src/**)", "Edit(**/*.lock)", "Write(docs/*)", "Glob(src/**)", "Grep(src/**)"],
        calls=[("Read", {"file_path": "src/a.py"}), ("Read", {"file_path": "README.md"}),
               ("Read", {"file_path": "/etc/hosts"}), ("Read", {"file_path": "other/x.txt"}),
               ("Edit", {"file_path": "src/a.py", **edit}), ("Edit", {"file_path": "uv.lock", **edit}),
               ("Write", {"file_path": "docs/x.md", "content": "x"}), ("Glob", {"pattern": "*.py", "path": "src"}),
               ("Grep", {"pattern": "x", "path": "src"})],
    )

"""``pegboard config set`` and ``pegboard permissions add``: change the
person's config file (or a trusted project's) from the command line.

Each change is checked before it is written: the toolbox is loaded as if
the file already held it (``load_settings(replaced=...)``), and a change
that would bring a problem the configuration does not have now (a value
the config models refuse, a rule its plugin's matcher cannot parse, a key
a project may not set) is refused with the problem. The file is edited
with tomlkit, so its comments and layout stay, and written atomically
under the lock the other config writers take (``_grants.edit_toml``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .shared import EXIT_FAILED, CLIState
from .._loading.config import ConfigError, config_dir, load_settings
from .._api.decisions import Rule
from .._loading.grants import edit_toml
from .._engine.toolbox import Toolbox
from .._loading.trust import TrustStore

if TYPE_CHECKING:
    from .._loading.config import Settings

__all__ = ["add_rule", "set_value", "target_file"]


class Refused(click.ClickException):
    """A change that was not written, with why: exit 1."""

    exit_code = EXIT_FAILED


def target_file(state: CLIState, project: bool) -> Path:
    """The file a change goes to: the user config, or with ``project`` the
    project's ``.pegboard/config.toml`` (a trusted project's only: an
    untrusted one's files may only narrow what runs)."""

    if not project:
        return config_dir() / "config.toml"
    root = (state.cwd or Path.cwd()).resolve()
    if not TrustStore(config_dir()).is_trusted(root):
        raise Refused(f"{root} is not trusted, so its config may only narrow what runs: `pegboard trust {root}` "
                      "first, or leave out --project to change your user config")
    return root / ".pegboard" / "config.toml"


def parse_value(text: str) -> Any:
    """VALUE as TOML (``true``, ``30``, ``["Bash"]``, ``"text"``), else the text itself as a string."""
    import tomllib

    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def set_value(state: CLIState, key: str, text: str, project: bool) -> tuple[Path, Any]:
    """Set dotted ``key`` (``permissions.mode``, ``plugins.web.timeout_s``) to
    VALUE in the target file; the file and the value written."""
    import tomlkit

    parts = key.split(".")
    if not all(part.strip() for part in parts):
        raise click.UsageError(f"{key!r} is not a key: write it dotted, as `pegboard config show` lists them "
                               "(permissions.mode, plugins.web.timeout_s)")
    value = parse_value(text)
    target = target_file(state, project)

    def change(document: Any) -> bool:
        node: Any = document
        for depth, part in enumerate(parts[:-1]):
            if part not in node:
                # [plugins.web], not an empty [plugins] above it
                node[part] = tomlkit.table(is_super_table=depth < len(parts) - 2)
            node = node[part]
            if not isinstance(node, MutableMapping):
                raise Refused(f"{target}: {'.'.join(parts[:depth + 1])} is a value, not a table")
        node[parts[-1]] = value
        check(state, target, document.unwrap(), f"{key} = {json.dumps(value)}")
        return True

    edit(target, change)
    return target, value


def add_rule(state: CLIState, behavior: str, text: str, project: bool) -> tuple[Path, bool]:
    """Add a permission rule to ``[permissions] <behavior>`` of the target
    file, once: parsed and compiled through the plugin that owns its tool
    first, refused with why when it does not parse or names no known tool.
    The file, and whether it changed (False: the rule was there)."""
    import tomlkit

    target = target_file(state, project)
    toolbox = state.toolbox(inventory=True, listing=True)
    try:
        rule = Rule.parse(text, behavior, str(target), toolbox.settings.root)  # type: ignore[arg-type]
        toolbox.permissions.check_new_rule(rule)
    except ValueError as exc:
        raise Refused(f"rule {text!r} not added: {exc}") from None
    changed = False

    def change(document: Any) -> bool:
        nonlocal changed
        table = document.get("permissions")
        if table is None:
            table = document["permissions"] = tomlkit.table()
        if not isinstance(table, MutableMapping):
            raise Refused(f"{target}: permissions is a value, not a table")
        rules = table.get(behavior)
        if rules is None:
            rules = table[behavior] = tomlkit.array()
        if not isinstance(rules, list):
            raise Refused(f"{target}: [permissions] {behavior} is not a list")
        if text in rules:
            return False
        rules.append(text)
        check(state, target, document.unwrap(), f"{behavior} rule {text!r}")
        changed = True
        return True

    edit(target, change)
    return target, changed


def edit(target: Path, change: Callable[[Any], bool]) -> None:
    try:
        edit_toml(target, change)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def check(state: CLIState, target: Path, data: dict[str, Any], what: str) -> None:
    """Refuse the change (``Refused``) when the configuration with ``target``
    holding ``data`` has a problem it does not have now."""
    new = _problems(state, {target: data})
    if not new:
        return
    old = _problems(state, None)
    added = [problem for problem in new if problem not in old]
    if added:
        raise Refused(f"{what} not written to {target}:\n  " + "\n  ".join(added))


def _problems(state: CLIState, replaced: dict[Path, dict[str, Any]] | None) -> list[str]:
    """Every problem of the configuration (``replaced``: with those files
    holding that data): config errors, plugins that fail on their tables,
    what a project's file sets that is not applied."""

    root = state.cwd or Path.cwd()
    try:
        settings: Settings = load_settings(root, state.config, replaced=replaced)
        toolbox = Toolbox._from_settings(settings, listing=True, plugins=state._only, extra_plugins=state._given)
    except ConfigError as exc:
        return list(exc.problems)
    problems = list(settings.problems)
    problems += [f"plugin {r.name!r}: {r.error}" for r in toolbox.records.values() if r.error]
    problems += [f"not applied: {item.describe()}" for item in settings.ignored]
    return problems

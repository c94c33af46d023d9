"""Old private addresses of public names, kept working for one release.

A private module lists what moved in a ``_MOVED`` table and answers for it
from its module ``__getattr__`` (PEP 562) through ``moved``: the name still
imports, with a ``DeprecationWarning`` that names the public replacement.
The core itself never imports a moved name from its old address.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["MOVED_MODULES", "keep_old_module_paths", "moved"]


def moved(module: str, name: str, replacement: str, value: Any) -> Any:
    """Warn that ``module.name`` is now ``replacement``, and return ``value``."""
    warnings.warn(f"{module}.{name} is private and will be removed in the next release; "
                  f"import {replacement} instead", DeprecationWarning, stacklevel=3)
    return value


# Private modules that moved into folders by role (core/_api, core/_engine, ...):
# old path -> new path, importable for one release with a DeprecationWarning,
# for code that reached into them although they were private.
MOVED_MODULES = {
    "pegboard._approvals_page": "pegboard._cli.approvals_page",
    "pegboard._arguments": "pegboard._engine.arguments",
    "pegboard._atomic": "pegboard._util.atomic",
    "pegboard._audit": "pegboard._services.audit",
    "pegboard._builtin_inputs": "pegboard._builtin.inputs",
    "pegboard._builtin_tools": "pegboard._builtin.tools",
    "pegboard._calls": "pegboard._api.calls",
    "pegboard._catalogue": "pegboard._api.catalogue",
    "pegboard._cli": "pegboard._cli.main",
    "pegboard._cli_approvals": "pegboard._cli.commands.approvals",
    "pegboard._cli_audit": "pegboard._cli.commands.audit",
    "pegboard._cli_commands": "pegboard._cli.commands",
    "pegboard._cli_host": "pegboard._cli.terminal_host",
    "pegboard._cli_plugins": "pegboard._cli.commands.plugins",
    "pegboard._cli_sessions": "pegboard._cli.commands.sessions",
    "pegboard._cli_settings": "pegboard._cli.config_edit",
    "pegboard._cli_shared": "pegboard._cli.shared",
    "pegboard._cli_store": "pegboard._cli.commands.store",
    "pegboard._cli_stream": "pegboard._cli.stream_output",
    "pegboard._cli_trust": "pegboard._cli.commands.trust",
    "pegboard._clients": "pegboard._api.clients",
    "pegboard._config": "pegboard._loading.config",
    "pegboard._console": "pegboard._cli.console",
    "pegboard._decisions": "pegboard._api.decisions",
    "pegboard._deprecation": "pegboard._util.deprecation",
    "pegboard._descriptions": "pegboard._loading.descriptions",
    "pegboard._dirs": "pegboard._util.folders",
    "pegboard._doctor": "pegboard._api.checks",
    "pegboard._entrypoints": "pegboard._loading.entry_points",
    "pegboard._errors": "pegboard._util.errors",
    "pegboard._gitdirs": "pegboard._util.git_dirs",
    "pegboard._grants": "pegboard._loading.grants",
    "pegboard._hookcheck": "pegboard._loading.hookcheck",
    "pegboard._hooks": "pegboard._loading.hooks",
    "pegboard._hookspecs": "pegboard._api.hookspecs",
    "pegboard._layercache": "pegboard._loading.layer_cache",
    "pegboard._lazyrules": "pegboard._engine.permissions.lazy_rules",
    "pegboard._levels": "pegboard._api.levels",
    "pegboard._listing": "pegboard._cli.listing",
    "pegboard._localplugins": "pegboard._loading.local_plugins",
    "pegboard._matchers": "pegboard._api.matchers",
    "pegboard._nearest": "pegboard._util.nearest",
    "pegboard._paths": "pegboard._util.path_facts",
    "pegboard._pending": "pegboard._services.pending",
    "pegboard._permissions": "pegboard._engine.permissions.engine",
    "pegboard._pipeline": "pegboard._engine.pipeline",
    "pegboard._plugin_context": "pegboard._api.plugin_context",
    "pegboard._plugin_session": "pegboard._api.plugin_session",
    "pegboard._plugincheck": "pegboard._engine.plugin_check",
    "pegboard._plugins": "pegboard._loading.plugins",
    "pegboard._policy": "pegboard._api.policy",
    "pegboard._preview": "pegboard._engine.permissions.preview",
    "pegboard._progress": "pegboard._util.progress",
    "pegboard._protected": "pegboard._engine.permissions.protected",
    "pegboard._records": "pegboard._api.records",
    "pegboard._redact": "pegboard._util.redact",
    "pegboard._scaffold": "pegboard._cli.scaffold",
    "pegboard._schemas": "pegboard._api.schemas",
    "pegboard._scope": "pegboard._loading.scope",
    "pegboard._session": "pegboard._engine.session",
    "pegboard._session_state": "pegboard._engine.session_state",
    "pegboard._sessions": "pegboard._engine.session_records",
    "pegboard._stdout": "pegboard._util.stdout",
    "pegboard._store": "pegboard._services.store",
    "pegboard._streams": "pegboard._engine.streams",
    "pegboard._sync": "pegboard._engine.sync_facade",
    "pegboard._tables": "pegboard._services.tables",
    "pegboard._tasks": "pegboard._api.tasks",
    "pegboard._testing": "pegboard._kit.fixtures",
    "pegboard._toolbox": "pegboard._engine.toolbox",
    "pegboard._tools": "pegboard._api.tools",
    "pegboard._tracing": "pegboard._engine.tracing",
    "pegboard._trust": "pegboard._loading.trust",
    "pegboard._version": "pegboard._api.version",
    "pegboard._wire": "pegboard._api.wire",
}


class _OldModulePaths:
    """A ``sys.meta_path`` finder that answers an old private module path with the module's new one."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> Any:
        new = MOVED_MODULES.get(fullname)
        if new is None:
            return None
        from importlib.machinery import ModuleSpec

        loader: Any = _Alias(new)
        return ModuleSpec(fullname, loader)


class _Alias:
    """Imports the new module and puts it in ``sys.modules`` under the old name, which the import
    then returns; the new module's own ``__name__`` and ``__spec__`` stay as they are."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: Any) -> None:
        return None  # a placeholder, replaced in exec_module

    def exec_module(self, module: Any) -> None:
        import importlib
        import sys

        warnings.warn(f"{module.__name__} moved to {self.new} and the old path will be removed in the next "
                      "release; it is private: import public names from pegboard, pegboard.paths, "
                      "pegboard.cli or pegboard.testing", DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = importlib.import_module(self.new)


def keep_old_module_paths() -> None:
    """Let the old private module paths import, once per process."""
    import sys

    if not any(isinstance(finder, _OldModulePaths) for finder in sys.meta_path):
        sys.meta_path.append(_OldModulePaths())

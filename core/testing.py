"""pegboard.testing: pytest fixtures and helpers for testing pegboard plugins.

pytest loads this module as a plugin wherever pegboard is installed (the
``pytest11`` entry point ``pegboard``); its fixtures do nothing until a test
asks for them. docs/testing.md has the whole kit with examples:

* ``pegboard_env``: pegboard's config, data, cache and policy places for
  this test alone (``XDG_*`` set, ``PEGBOARD_*`` unset); make it autouse in
  your conftest so no test reads your own config.
* ``pegboard_project``: a project folder; ``.config(text)`` writes its
  ``.pegboard/config.toml`` and trusts it.
* ``pegboard_plugins`` (override it: ``{"greet": greet_module}``) and
  ``pegboard_installed`` (which installed plugins load beside them: none).
* ``pegboard_toolbox``, ``pegboard_session``, ``pegboard_load(config=...)``:
  toolboxes and sessions over plugins that need not be installed.
* ``pegboard_host``: a ``ScriptedHost`` that records asks and answers them
  from a script.
* ``pegboard_call``, ``pegboard_decide``: a call, or its decision without
  running it, from a plain test function (``call``, ``decide`` for any
  session or toolbox).
* ``pegboard_cli``: ``pegboard ...`` in-process, in the project, with the plugins.
* ``pegboard_check``: ``pegboard.check_plugin`` (``pegboard plugins check``).
* ``pegboard_upgrade``: a store upgrade in one process (``StoreUpgrade``: a
  database at the old schema, then the new plugin against it).

Importing it imports nothing of the engine (pytest loads it in every run);
``check_plugin`` and ``PluginCheck`` are imported on first use.
"""

import typing as _typing

from ._kit.fixtures import (
    Asked,
    CLIRunner,
    PegboardEnv,
    PluginLoadError,
    Project,
    ScriptedHost,
    StoreUpgrade,
    call,
    decide,
    isolate,
    load_toolbox,
    pegboard_call,
    pegboard_check,
    pegboard_cli,
    pegboard_decide,
    pegboard_env,
    pegboard_host,
    pegboard_installed,
    pegboard_load,
    pegboard_plugins,
    pegboard_project,
    pegboard_session,
    pegboard_toolbox,
    pegboard_upgrade,
)

__all__ = [
    "Asked",
    "CLIRunner",
    "PegboardEnv",
    "PluginCheck",
    "PluginLoadError",
    "Project",
    "ScriptedHost",
    "StoreUpgrade",
    "call",
    "check_plugin",
    "decide",
    "isolate",
    "load_toolbox",
    "pegboard_call",
    "pegboard_check",
    "pegboard_cli",
    "pegboard_decide",
    "pegboard_env",
    "pegboard_host",
    "pegboard_installed",
    "pegboard_load",
    "pegboard_plugins",
    "pegboard_project",
    "pegboard_session",
    "pegboard_toolbox",
    "pegboard_upgrade",
]

if _typing.TYPE_CHECKING:
    from ._engine.plugin_check import PluginCheck, check_plugin

_LAZY = ("PluginCheck", "check_plugin")


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'pegboard.testing' has no attribute {name!r}")
    from ._engine import plugin_check as _plugincheck

    value = getattr(_plugincheck, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

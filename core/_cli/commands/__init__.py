"""The core's own command groups, added the way a plugin adds commands.

``CoreCommands`` implements ``pegboard_register_commands`` as any plugin
does. The command line calls it before any plugin's, and without loading a
toolbox, so that ``pegboard trust`` and ``pegboard store migrate`` still
answer when the configuration does not load. Each group lives in a module
of its own, imported only when the command line needs a command other than
its top-level ones (a permissions check or a tool listing imports none).
"""

from __future__ import annotations

import importlib

import click

from ..._api.hookspecs import hookimpl

__all__ = ["CORE_COMMANDS", "CoreCommands"]

_GROUPS = {
    "approvals": ("pegboard._cli.commands.approvals", "approvals_group"),
    "audit": ("pegboard._cli.commands.audit", "audit_group"),
    "plugins": ("pegboard._cli.commands.plugins", "plugins_group"),
    "sessions": ("pegboard._cli.commands.sessions", "sessions_group"),
    "store": ("pegboard._cli.commands.store", "store_group"),
    "trust": ("pegboard._cli.commands.trust", "trust_command"),
}


class CoreCommands:
    """``approvals``, ``audit``, ``plugins``, ``sessions``, ``store`` and ``trust``."""

    names = tuple(_GROUPS)

    @hookimpl
    def pegboard_register_commands(self, cli: click.Group) -> None:
        for name, (module, attribute) in _GROUPS.items():
            command: click.Command = getattr(importlib.import_module(module), attribute)
            cli.add_command(command, name)


CORE_COMMANDS = CoreCommands()

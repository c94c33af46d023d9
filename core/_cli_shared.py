"""What every command shares: the global options and the toolbox they
select. Public as ``pegboard.cli``.

This module stays light: importing it imports click and nothing of the
engine (a warm ``pegboard tools list`` must not pay for pydantic models).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ._policy import POLICY_NAMES

if TYPE_CHECKING:
    from ._config import ConfigError
    from ._toolbox import Toolbox

__all__ = ["CLIState", "JSON", "MODE", "current_state", "fail_config", "global_options", "terminal_host"]


@dataclass(slots=True)
class CLIState:
    """What every command shares: the global options and, once needed, the toolbox.

    ``current_state()`` finds it from inside a command. ``toolbox`` is a
    method, not an attribute: ``current_state().toolbox()`` loads the toolbox
    for the options given (once per set of arguments) and returns it.
    """

    cwd: Path | None = None
    """``--cwd``: the project root and working directory (None: the current directory)."""
    config: Path | None = None
    """``--config`` (or ``PEGBOARD_CONFIG``): an extra config file above the user and project ones."""
    _toolboxes: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    # What pegboard.testing's CLI runner loads besides (or instead of) the
    # installed plugins: Toolbox.load's extra_plugins and plugins.
    _given: Mapping[str, object] | None = None
    _only: list[str] | None = None
    # Set by the console script only (``main``), never in a process that
    # goes on after the command (a test, an embedding): see ``toolbox``.
    _freeze_after_load: bool = False
    # Console script only too: fd 1 is the process's own to divert.
    _plugin_output_to_stderr: bool = False

    def toolbox(self, *, inventory: bool = False, host: object | None = None, listing: bool = False) -> Toolbox:
        """The toolbox for ``--cwd`` and ``--config``, loaded once; a config
        an operator must fix ends the command through ``fail_config``.
        ``listing``: for commands that only show things, so that plugins
        start nothing to learn their tools (``PluginContext.listing_only``).
        ``inventory``: load switched-off plugins' tools too, marked disabled
        (for listings of everything). ``host``: an object implementing host
        hooks (``pegboard_ask``, such as ``terminal_host()``), registered in
        this toolbox."""
        # Keyed on the options too: finding plugin commands loads a toolbox
        # before options written after the command name are parsed.
        key = (self.cwd, self.config, inventory, host, listing)
        if key not in self._toolboxes:
            import gc

            # In the console script (``_freeze_after_load``), the collector
            # waits until the load is done: what a load makes (modules,
            # classes, schemas, the toolbox) lives until the process ends, and
            # the collections its allocations would set off walk it again and
            # again to free almost nothing (5M instructions of a permissions
            # check, 22M of a cold tools list). The cycles the load leaves
            # behind (some 19K objects, about 0.6 MB) are frozen with the rest.
            pause = self._freeze_after_load and gc.isenabled()
            if pause:
                gc.disable()
            try:
                from contextlib import nullcontext

                from ._config import ConfigError
                from ._stdout import plugin_output_to_stderr
                from ._toolbox import Toolbox

                # What a plugin prints while it is imported is not the command's
                # output (and would be read as a message by a command that speaks
                # a protocol on stdout, such as an MCP server on stdio).
                diverted = plugin_output_to_stderr() if self._plugin_output_to_stderr else nullcontext()
                try:
                    with diverted:
                        self._toolboxes[key] = Toolbox.load(cwd=self.cwd, config=self.config, inventory=inventory,
                                                            host=host, listing=listing, plugins=self._only,
                                                            extra_plugins=self._given)
                except ConfigError as exc:
                    fail_config(exc)
                if self._freeze_after_load:
                    # Neither the command's collections nor the full ones at exit
                    # need walk it (about 5% of a permissions check's instructions).
                    gc.freeze()
            finally:
                if pause:
                    gc.enable()
        return self._toolboxes[key]


def current_state() -> CLIState:
    """The running command's ``CLIState`` (made on first use)."""
    ctx = click.get_current_context()
    state = ctx.find_object(CLIState)
    if state is None:
        state = ctx.ensure_object(CLIState)
    return state


def terminal_host() -> object | None:
    """The host ``pegboard call`` uses: it asks the person at this terminal
    (``pegboard_ask``, ``pegboard_elicit``). None when stdin is not a
    terminal: then nobody is asked, and an ask is a deny that says why."""
    if not sys.stdin.isatty():
        return None
    from ._cli_host import TerminalHost

    return TerminalHost()


def fail_config(exc: ConfigError) -> NoReturn:
    """End the command as pegboard does for configuration an operator must
    fix: each problem on stderr (file, key, what was expected), exit 2."""
    click.echo("pegboard: configuration problems:", err=True)
    for line in exc.problems:
        click.echo(f"  {line}", err=True)
    sys.exit(2)


def _set_cwd(ctx: click.Context, _: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.ensure_object(CLIState).cwd = value


def _set_config(ctx: click.Context, _: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.ensure_object(CLIState).config = value


def accept_global_options(command: click.Command) -> None:
    """Give ``command`` (and, for a group, every command in it) ``--cwd`` and
    ``--config`` where it lacks them, so a plugin's command takes them after
    its name like every built-in one."""
    names = {p.name for p in command.params}
    if "cwd" not in names or "config" not in names:
        holder = global_options(lambda: None)
        for param in holder.__click_params__:
            if param.name not in names:
                command.params.append(param)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_global_options(sub)


def global_options(fn: Any) -> Any:
    """``--config`` and ``--cwd`` on a command, so they may come after its
    name as well as before it (they set ``current_state()``, not arguments)."""
    fn = click.option("--cwd", type=click.Path(file_okay=False, path_type=Path), callback=_set_cwd,
                      expose_value=False, is_eager=True,
                      help="Project root and working directory.")(fn)
    fn = click.option("--config", type=click.Path(dir_okay=False, path_type=Path), callback=_set_config,
                      expose_value=False, is_eager=True, envvar="PEGBOARD_CONFIG",
                      help="Extra config file, above the user and project files.")(fn)
    return fn


MODE = click.option("--mode", type=click.Choice(POLICY_NAMES), default=None,
                    help="Permission mode or level (default: [permissions] mode).")
"""``--mode``: a permission mode or level name, passed as ``mode`` (None: the config's)."""

JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
"""``--json``: passed as ``as_json``."""

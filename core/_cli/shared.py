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

from .._api.policy import POLICY_NAMES

if TYPE_CHECKING:
    from .._loading.config import ConfigError
    from .._engine.toolbox import Toolbox

__all__ = ["ARGV", "CLIState", "EXIT_FAILED", "EXIT_NO_SUCH_TOOL", "EXIT_USAGE", "JSON", "MODE",
           "complete_plugin_names", "complete_tool_names", "current_state", "fail_config", "fail_json",
           "global_options", "styled", "terminal_host", "wants_json"]


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
        from .._loading.config import ConfigError

        try:
            return self._load_toolbox(inventory=inventory, host=host, listing=listing)
        except ConfigError as exc:
            fail_config(exc)

    def _load_toolbox(self, *, inventory: bool = False, host: object | None = None,
                      listing: bool = False) -> Toolbox:
        """``toolbox``, raising ``ConfigError`` (for ``doctor``, which lists each problem)."""
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

                from .._util.stdout import plugin_output_to_stderr
                from .._engine.toolbox import Toolbox

                # What a plugin prints while it is imported is not the command's
                # output (and would be read as a message by a command that speaks
                # a protocol on stdout, such as an MCP server on stdio).
                diverted = plugin_output_to_stderr() if self._plugin_output_to_stderr else nullcontext()
                with diverted:
                    self._toolboxes[key] = Toolbox.load(cwd=self.cwd, config=self.config, inventory=inventory,
                                                        host=host, listing=listing, plugins=self._only,
                                                        extra_plugins=self._given)
                if self._freeze_after_load:
                    # Neither the command's collections nor the full ones at exit
                    # need walk it (about 5% of a permissions check's instructions).
                    gc.freeze()
            finally:
                if pause:
                    gc.enable()
        return self._toolboxes[key]


def complete_tool_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of tool names (``tools show``, ``call``, ``permissions
    check``): the cached listing's names, else a listing toolbox's."""
    return _complete(ctx, incomplete, lambda toolbox: list(toolbox.statuses), rows=True)


def complete_plugin_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of plugin names (``plugins check``)."""
    return _complete(ctx, incomplete, lambda toolbox: list(toolbox.records))


def _complete(ctx: click.Context, incomplete: str, names_of: Any, rows: bool = False) -> list[Any]:
    from click.shell_completion import CompletionItem

    state = ctx.find_object(CLIState) or CLIState()
    names: list[str] = []
    try:
        if rows and state._given is None:
            from .listing import load_rows

            cached = load_rows(state.cwd or Path.cwd(), state.config)
            if cached is not None:
                names = [row["name"] for row in cached[0]]
        if not names:
            from .._util.stdout import plugin_output_to_stderr

            with plugin_output_to_stderr():  # nothing but the candidates on stdout
                names = names_of(state._load_toolbox(inventory=True, listing=True))
    except Exception:
        return []  # a completion that cannot load the toolbox offers nothing, and says nothing
    return [CompletionItem(name) for name in sorted(names) if name.startswith(incomplete)]


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
    from .terminal_host import TerminalHost

    return TerminalHost()


# Exit statuses the commands share (the root command's help and docs/cli.md list them).
EXIT_FAILED, EXIT_USAGE, EXIT_NO_SUCH_TOOL = 1, 2, 4
# The root context's meta key for the command line's arguments (``--json`` anywhere on it).
ARGV = "pegboard.argv"


def wants_json() -> bool:
    """Whether the running command line asked for JSON (``--json``): its
    errors are then JSON too."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    if ctx.params.get("as_json"):
        return True
    argv = ctx.find_root().meta.get(ARGV, ())
    return "--json" in argv[:argv.index("--")] if "--" in argv else "--json" in argv


# The colour of each outcome word (doctor's statuses, decisions); click.echo
# drops it when the output is not a terminal, and NO_COLOR switches it off.
_COLOURS = {"ok": "green", "allow": "green", "warn": "yellow", "ask": "yellow", "fail": "red", "deny": "red"}


def styled(text: str, outcome: str) -> str:
    """``text`` in ``outcome``'s colour (``fail``, ``deny``: red; ``warn``,
    ``ask``: yellow; ``ok``, ``allow``: green), for ``click.echo``."""
    colour = _COLOURS.get(outcome.lower())
    return click.style(text, fg=colour, bold=colour == "red") if colour else text


def fail_json(message: str, exit_code: int, **details: Any) -> NoReturn:
    """End the command with ``{"error": message, "exit_code": ..., **details}`` on stdout."""
    import json

    click.echo(json.dumps({"error": message, "exit_code": exit_code, **details}, indent=2))
    sys.exit(exit_code)


def fail_config(exc: ConfigError) -> NoReturn:
    """End the command as pegboard does for configuration an operator must
    fix: each problem on stderr (file, key, what was expected), exit 2
    (with ``--json``: a JSON error on stdout listing them)."""
    if wants_json():
        fail_json("configuration problems", EXIT_USAGE, problems=list(exc.problems))
    click.echo("pegboard: configuration problems:", err=True)
    for line in exc.problems:
        click.echo(f"  {line}", err=True)
    sys.exit(EXIT_USAGE)


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

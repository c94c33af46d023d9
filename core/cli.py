"""What a plugin needs to add commands to ``pegboard`` (public API).

A plugin adds commands in ``pegboard_register_commands(cli)``; inside a
command, ``current_state()`` gives the global options as parsed and the
toolbox they select::

    import click
    from pegboard import hookimpl
    from pegboard.cli import JSON, current_state, global_options

    @hookimpl
    def pegboard_register_commands(cli):
        @cli.command("where")
        @global_options
        @JSON
        def where(as_json):
            click.echo(current_state().toolbox().settings.root)

``fail_config(exc)`` ends a command the way pegboard does for a
``ConfigError``: each problem on stderr, exit status 2.
``terminal_host()`` is the host ``pegboard call`` asks the person with
(None when stdin is not a terminal): pass it to ``toolbox(host=...)``.
"""

from ._cli_shared import JSON, MODE, CLIState, current_state, fail_config, global_options, terminal_host

__all__ = ["CLIState", "JSON", "MODE", "current_state", "fail_config", "global_options", "terminal_host"]

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
``claim_stdout()`` is for a command that speaks a protocol on stdout: it
returns the real stdout and sends everything else printed from then on to
stderr (what plugins print while they are imported goes there already).
``progress(text)`` shows that something is under way, at a terminal only
(a spinner with the seconds so far, ``step(line)`` for a line per step)::

    from pegboard.cli import progress

    with progress("Indexing the notes") as shown:
        for name in names:
            index(name)
            shown.step(f"indexed {name}")
"""

from ._cli.shared import JSON, MODE, CLIState, current_state, fail_config, global_options, terminal_host
from ._util.progress import Progress, progress
from ._util.stdout import claim_stdout

__all__ = ["CLIState", "JSON", "MODE", "Progress", "claim_stdout", "current_state", "fail_config", "global_options",
           "progress", "terminal_host"]

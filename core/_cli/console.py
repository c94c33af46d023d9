"""The ``pegboard`` console script (``[project.scripts]``).

The command line itself is ``pegboard._cli.main``; this runs first, to do what
only a process that is the ``pegboard`` command may do before importing it:
read the installed entry points once, before the first pydantic model is
built (``_entrypoints.prepare_command``).
"""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """The console script: the command line of a process that ends with the command."""
    from .._loading.entry_points import prepare_command

    prepare_command()
    from .main import main as command_line

    command_line()

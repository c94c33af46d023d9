"""The hook the fs plugin declares (``pegboard_add_hooks``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pegboard import hookspec

if TYPE_CHECKING:
    from pegboard import PluginContext, PluginSession


@hookspec
def pegboard_file_read(session: PluginSession, path: Path, source: str, context: PluginContext) -> None:
    """A file was shown to the model in full (``source``: the tool that showed it).
    ``context`` is the implementing plugin's own, which the core supplies
    (callers do not pass one).

    The fs plugin records it so that Edit and Write accept the file; the shell
    plugin calls it for ``cat``, ``head``, ``tail`` and ``sed -n``, with
    ``context.notify("pegboard_file_read", session=..., path=..., source=...)``.
    """

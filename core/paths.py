"""Path helpers and pegboard's own folders, for plugins (public API).

Check paths where they resolve, not as strings: ``resolve_path`` follows
symlinks (also in the parents of a file about to be created) and
``is_within`` compares resolved paths component by component. Inside a
permission vote, prefer ``PermissionRequest.resolve``, which remembers the
answer for the rest of that decision.

::

    from pegboard.paths import is_within, resolve_path

    real = resolve_path(args.file_path, ctx.root)
    if not any(is_within(real, d) for d in ctx.working_dirs):
        ...
"""

from ._config import config_dir, data_dir
from ._paths import gitignore_form, is_within, relative_posix, resolve_path

__all__ = ["config_dir", "data_dir", "gitignore_form", "is_within", "relative_posix", "resolve_path"]

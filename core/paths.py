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

Every write that must not be lost goes through ``atomic_write(real, data)``:
the whole new file or the old one, never half, with no symlink followed on
the way (``PathChanged`` when one appeared since the path was resolved).
``open_dir`` reaches a resolved folder the same way, for reads that need it.

A git directory under another name (a bare mirror, a ``--separate-git-dir``,
a linked worktree's folder) is protected like ``.git``: ``is_git_dir`` (a
folder) and ``looks_like_git_dir`` (the names a listing found) say what git
takes for one.
"""

from ._util.atomic import MultiplyLinked, NotRegular, PathChanged, atomic_write, open_dir, walk_error
from ._util.folders import config_dir, data_dir
from ._util.git_dirs import is_git_dir, looks_like_git_dir
from ._util.path_facts import gitignore_form, is_within, relative_posix, resolve_path

__all__ = [
    "MultiplyLinked",
    "NotRegular",
    "PathChanged",
    "atomic_write",
    "config_dir",
    "data_dir",
    "gitignore_form",
    "is_git_dir",
    "is_within",
    "looks_like_git_dir",
    "open_dir",
    "relative_posix",
    "resolve_path",
    "walk_error",
]

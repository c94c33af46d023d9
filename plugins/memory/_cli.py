"""``pegboard memory list|show|delete|export``: the person's own memories.

The person is ``[plugins.memory] person`` (else the login name); the set is
theirs, or with ``scope = "project"`` theirs in the project of ``--cwd``.
``--all`` takes every set of theirs the store has.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pegboard.cli import JSON, current_state, global_options

if TYPE_CHECKING:
    from pegboard import PluginContext

    from ._config import MemoryConfig
    from ._files import Space

__all__ = ["memory_group"]

T = TypeVar("T")
ALL = click.option("--all", "every", is_flag=True,
                   help="Every set of your memories in the store (each project's too), not only this one's.")


def _arg_key(text: str) -> str:
    """A path as the person types it (``/memories/notes.md`` or ``notes.md``) to its key."""
    from ._confine import ROOT, PathRefused, memory_key

    full = text if text.startswith("/") else f"{ROOT}/{text}" if text not in ("", ".") else ROOT
    try:
        return memory_key(full)
    except PathRefused as exc:
        raise click.BadParameter(str(exc)) from None


def memory_group(plugin: str) -> click.Group:
    """The ``memory`` command group of the plugin installed as ``plugin``."""

    def mine() -> tuple[PluginContext, MemoryConfig, Space]:
        from ._config import MemoryConfig
        from ._handler import login_name, space_for

        toolbox = current_state().toolbox()
        context = toolbox.context_for(plugin)
        if context is None:
            click.echo(f"pegboard: the {plugin} plugin is not loaded", err=True)
            sys.exit(2)
        config = toolbox.plugin_config(plugin)
        config = config if isinstance(config, MemoryConfig) else MemoryConfig()
        return context, config, space_for(config.person or login_name(), config, str(context.root))

    @contextmanager
    def database(context: PluginContext) -> Iterator[None]:
        """A refusal, or the database's error, as one line on stderr and exit 1."""
        from ._commands import Refused

        try:
            yield
        except Refused as exc:
            click.echo(f"pegboard: {exc}", err=True)
            sys.exit(1)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:
            click.echo(f"pegboard: {context.store.describe_error(exc)}", err=True)
            sys.exit(1)

    def sets(context: PluginContext, space: Space, every: bool, read: Callable[[Any, Space], T]) \
            -> list[tuple[Space, T]]:
        from ._files import spaces_of

        with database(context), context.store.begin(read_only=True) as conn:
            chosen = spaces_of(conn, space.person) if every else [space]
            return [(s, read(conn, s)) for s in chosen]

    @click.group("memory")
    def group() -> None:
        """Your agent's memories (the memory tool's /memories), kept in pegboard's store."""

    @group.command("list")
    @global_options
    @ALL
    @JSON
    def list_(every: bool, as_json: bool) -> None:
        """Your memory files: size, last change, path.

        Exit status: 0 the files listed; 1 the store failed (the reason on stderr); 2 a usage or
        configuration error."""
        from ._files import entries

        context, config, space = mine()
        if not context.store.exists():
            click.echo(json.dumps({"person": space.person, "sets": []}) if as_json
                       else "No memories (the store is not created yet).")
            return
        found = sets(context, space, every, entries)
        if as_json:
            click.echo(json.dumps({"person": space.person, "scope": config.scope, "sets": [
                {"project_root": s.project_root, "files": [
                    {"path": f"/memories/{e.path}", "size": e.size, "updated_at": e.updated_at,
                     "updated_by": e.updated_by} for e in sorted(files.values(), key=lambda e: e.path)]}
                for s, files in found]}, indent=2))
            return
        for s, files in found:
            total = sum(e.size for e in files.values())
            click.echo(f"{s.describe()}: {len(files)} file{'' if len(files) == 1 else 's'}, {total:,} bytes")
            for entry in sorted(files.values(), key=lambda e: e.path):
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.updated_at))
                click.echo(f"  {entry.size:>9,}  {when}  /memories/{entry.path}")

    @group.command("show")
    @global_options
    @click.argument("path")
    def show(path: str) -> None:
        """Print a memory file (or list a folder): /memories/notes.md, or notes.md.

        Exit status: 0 printed; 1 there is no such file or folder, or the store failed; 2 a usage or
        configuration error (a path outside /memories is one)."""
        from ._commands import listing
        from ._files import entries, read_file

        key = _arg_key(path)
        context, _config, space = mine()

        def read(conn: Any, s: Space) -> str:
            content = read_file(conn, s, key) if key else None
            return content if content is not None else listing(entries(conn, s), key) + "\n"

        if not context.store.exists():
            click.echo("pegboard: no memories yet (the store is not created yet)", err=True)
            sys.exit(1)
        [(_, text)] = sets(context, space, False, read)
        click.echo(text, nl=False)

    @group.command("delete")
    @global_options
    @click.argument("paths", nargs=-1, required=True)
    def delete_(paths: tuple[str, ...]) -> None:
        """Delete memory files or folders (with everything in them).

        Exit status: 0 every path named was deleted; 1 one was not there, or the store failed; 2 a
        usage or configuration error (a path outside /memories is one)."""
        from ._commands import Refused, delete

        keys = [_arg_key(p) for p in paths]
        context, _config, space = mine()
        failed = 0
        for key in keys:
            try:
                with context.store.begin() as conn:
                    click.echo(delete(conn, space, key).replace("Successfully deleted", "deleted"))
            except Refused as exc:
                click.echo(f"pegboard: {exc}", err=True)
                failed += 1
            except Exception as exc:
                click.echo(f"pegboard: {context.store.describe_error(exc)}", err=True)
                sys.exit(1)
        sys.exit(1 if failed else 0)

    @group.command("export")
    @global_options
    @ALL
    def export(every: bool) -> None:
        """Every memory file with its content, as JSON on stdout.

        Exit status: 0 exported; 1 the store failed (the reason on stderr); 2 a usage or configuration
        error."""
        from ._files import entries, read_file

        context, config, space = mine()

        def read(conn: Any, s: Space) -> list[dict[str, Any]]:
            return [{"path": f"/memories/{e.path}", "content": read_file(conn, s, e.path), "size": e.size,
                     "updated_at": e.updated_at}
                    for e in sorted(entries(conn, s).values(), key=lambda e: e.path)]

        found = sets(context, space, every, read) if context.store.exists() else []
        click.echo(json.dumps({"person": space.person, "scope": config.scope, "sets": [
            {"project_root": s.project_root, "files": files} for s, files in found]}, indent=2,
            ensure_ascii=False))

    return group

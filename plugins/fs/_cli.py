"""``pegboard checkpoints list|restore``: rewind what a session's fs tools wrote."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pegboard.cli import JSON

from ._checkpoints import CheckpointStore, session_checkpoints_dir, sessions_root

__all__ = ["checkpoints"]


def _latest_session() -> str | None:
    root = sessions_root()
    found = [p for p in root.glob("*/checkpoints/index.jsonl")] if root.is_dir() else []
    if not found:
        return None
    return max(found, key=lambda p: p.stat().st_mtime).parent.parent.name


def _store(session_id: str | None) -> tuple[str, CheckpointStore]:
    sid = session_id or _latest_session()
    if sid is None:
        raise click.ClickException(f"no session has checkpoints under {sessions_root()}")
    try:
        folder = session_checkpoints_dir(sid)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if not folder.is_dir():
        raise click.ClickException(f"session {sid} has no checkpoints ({folder} does not exist)")
    return sid, CheckpointStore(folder)


@click.group()
def checkpoints() -> None:
    """List and restore the file checkpoints taken before each Write/Edit/NotebookEdit."""


@checkpoints.command("list")
@click.option("--session", "session_id", help="session id (default: the most recent session with checkpoints)")
@JSON
def list_cmd(session_id: str | None, as_json: bool) -> None:
    """Show a session's checkpoints, oldest first.

    Exit status: 0 the checkpoints listed; 2 a usage or configuration error."""
    sid, store = _store(session_id)
    cps = store.entries()
    if as_json:
        rows = [{"id": cp.id, "time": cp.time, "path": cp.path, "tool": cp.tool, "existed": cp.existed,
                 "size": cp.size, "kept": cp.blob is not None} for cp in cps]
        click.echo(json.dumps({"session": sid, "checkpoints": rows}, indent=2))
        return
    click.echo(f"session {sid}: {len(cps)} checkpoint(s)")
    for cp in cps:
        click.echo(cp.describe())


@checkpoints.command("restore")
@click.argument("checkpoint", type=int)
@click.option("--session", "session_id", help="session id (default: the most recent session with checkpoints)")
@click.option("--file", "only", type=click.Path(path_type=Path), help="restore only this file")
def restore_cmd(checkpoint: int, session_id: str | None, only: Path | None) -> None:
    """Put files back as they were before CHECKPOINT (later writes are undone too).

    Exit status: 0 restored (or nothing to restore); 1 the checkpoint or a file could not be
    restored (the reason on stderr); 2 a usage or configuration error."""
    _, store = _store(session_id)
    try:
        done = store.rewind(checkpoint, only=only.resolve() if only else None)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    for line in done or ["nothing to restore"]:
        click.echo(line)

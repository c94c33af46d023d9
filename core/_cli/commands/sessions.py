"""``pegboard sessions``: durable sessions, what each holds, and deleting them."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from ..shared import JSON, global_options
from ..shared import current_state as _state
from ..._engine.session_records import SessionRecords
from ..._services.store import StoreError

__all__ = ["MORE_CAP", "more_line", "sessions_group", "store_failure"]


def _records() -> Any:
    return SessionRecords(_state().toolbox())


def store_failure(toolbox: Any, exc: Exception) -> None:
    """End a command the store failed: the reason, with the URL redacted."""

    detail = str(exc) if isinstance(exc, StoreError) else toolbox.plugins.stores.store.describe_error(exc)
    click.echo(f"pegboard: the store failed: {detail}", err=True)
    sys.exit(1)


def _fail(records: Any, exc: Exception) -> None:
    store_failure(records.toolbox, exc)


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


@click.group("sessions")
def sessions_group() -> None:
    """Durable sessions (those given an id) and what they keep in the store."""


# "N more" lines count this far and no further (a count of a million rows is no listing's business).
MORE_CAP = 10_000


def more_line(more: int, limit: int, what: str) -> str:
    """``"... and 1,234 more sessions (--limit 1334 shows them)"``."""
    many = f"more than {MORE_CAP:,}" if more >= MORE_CAP else f"{more:,}"
    return f"... and {many} more {what} (--limit {limit + min(more, MORE_CAP):,} shows {'them' if more > 1 else 'it'})"


@sessions_group.command("list")
@global_options
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1),
              help="At most this many (the most recently used).")
@JSON
def sessions_list(limit: int, as_json: bool) -> None:
    """Durable sessions, last used first: their scratchpad and plugins' rows,
    and how many more there are.

    Exit status: 0 the sessions listed; 1 the store failed (the reason on stderr, the URL's password
    hidden); 2 a usage or configuration error."""
    records = _records()
    try:
        rows, more = records.listing(limit, MORE_CAP)
    except Exception as exc:
        _fail(records, exc)
        return
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        if more:  # stdout stays the rows
            click.echo(more_line(more, limit, "sessions"), err=True)
        return
    if not rows:
        click.echo("no durable sessions (a session given an id, e.g. `pegboard call --session ID`, is kept)")
        return
    click.echo(f"{'ID':<24} {'LAST ACTIVE':<19}  {'CREATED':<19}  HOLDS")
    for row in rows:
        pad = row["scratchpad"]
        holds = [f"scratchpad {pad['entries']} entries ({pad['chars']:,} chars)"] if pad["entries"] else []
        holds += [f"{table} {n} rows" for table, n in sorted(row["plugin_rows"].items())]
        parent = f"  (child of {row['parent_id']})" if row["parent_id"] else ""
        click.echo(f"{row['id']:<24} {when(row['last_active'])}  {when(row['created_at'])}  "
                   f"{', '.join(holds) or 'nothing yet'}{parent}")
        click.echo(f"{'':<24} root {row['root']}")
    if more:
        click.echo(more_line(more, limit, "sessions"))


@sessions_group.command("delete")
@global_options
@click.argument("session_ids", nargs=-1, required=True)
def sessions_delete(session_ids: tuple[str, ...]) -> None:
    """Delete sessions and everything plugins kept for them.

    Exit status: 0 every session named was deleted; 1 one was not found or could not be deleted
    (said on stderr), or the store failed; 2 a usage or configuration error."""
    records = _records()
    try:
        deleted, problems = records.delete(session_ids)
    except Exception as exc:
        _fail(records, exc)
        return
    for sid in session_ids:
        click.echo(f"deleted {sid}" if sid in deleted else f"no durable session {sid}")
    for problem in problems:
        click.echo(f"pegboard: {problem}", err=True)
    sys.exit(1 if problems or len(deleted) < len(set(session_ids)) else 0)


@sessions_group.command("prune")
@global_options
def sessions_prune() -> None:
    """Delete sessions unused for longer than [store] session_max_age_days.

    Exit status: 0 pruned; 1 a session could not be deleted (said on stderr), or the store failed; 2
    a usage or configuration error."""
    records = _records()
    age = _state().toolbox().settings.core.store.session_max_age_days
    if not age:
        click.echo("[store] session_max_age_days = 0: sessions never expire")
        return
    try:
        deleted, problems = records.prune()
    except Exception as exc:
        _fail(records, exc)
        return
    click.echo(f"deleted {len(deleted)} sessions unused for more than {age:g} days"
               + (f": {', '.join(deleted)}" if deleted else ""))
    for problem in problems:
        click.echo(f"pegboard: {problem}", err=True)
    sys.exit(1 if problems else 0)

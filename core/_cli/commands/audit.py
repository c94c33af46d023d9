"""``pegboard audit``: the record of permission decisions."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime
from typing import Any

import click

from ..._services.audit import newest_id, prune, recorded, recorded_page
from .sessions import MORE_CAP, more_line, store_failure, when
from ..shared import JSON, global_options
from ..shared import current_state as _state

__all__ = ["audit_group", "parse_when"]

_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_when(text: str, now: float | None = None) -> float:
    """``10m``, ``2h``, ``3d``, ``1w`` ago, or a local date or time in ISO
    form (``2026-11-01``, ``2026-11-01T09:30``): epoch seconds."""
    now = time.time() if now is None else now
    match = _RELATIVE.fullmatch(text.strip())
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected an age such as 10m, 2h, 3d, 1w, or a date such as "
                                 "2026-11-01 or 2026-11-01T09:30") from None


def _filters(session: str | None, since: str | None, tool: str | None, decision: str | None,
             client: str | None) -> dict[str, Any]:
    return {"session": session, "since": parse_when(since) if since else None, "tool": tool, "decision": decision,
            "client": client}


def _show(row: dict[str, Any]) -> str:
    answer = f" ({row['answer']} via {row['host']})" if row["answer"] else ""
    client = f"client {row['client']}; " if row.get("client") else ""
    return (f"{when(row['at'])}  {row['session_id']:<14} {row['tool']:<14} {row['decision']:<5} "
            f"{row['source_kind']:<10} {row['reason']}{answer}\n"
            f"{'':<21}{client}source: {row['source']}; mode {row['mode']}; input {row['input_digest'][:12]} "
            f"{row['input_preview']}")


def _audit_store() -> tuple[Any, Any]:
    toolbox = _state().toolbox()
    return toolbox, toolbox.plugins.stores("pegboard")


_FILTERS = [
    click.option("--session", "session", default=None, help="Only this session's decisions."),
    click.option("--since", default=None, help="Only decisions since WHEN: 10m, 2h, 3d, 1w, or 2026-11-01[T09:30]."),
    click.option("--tool", default=None, help="Only calls of this tool."),
    click.option("--decision", type=click.Choice(["allow", "deny"]), default=None, help="Only this outcome."),
    click.option("--client", default=None, help="Only calls made for this client (a server's signed-in client)."),
]


def _with_filters(fn: Any) -> Any:
    for option in reversed(_FILTERS):
        fn = option(fn)
    return fn


@click.group("audit")
def audit_group() -> None:
    """Every permission decision, when [audit] enabled = true (docs/store.md)."""


@audit_group.command("list")
@global_options
@_with_filters
@click.option("--limit", default=100, show_default=True, type=click.IntRange(min=1),
              help="At most this many (the newest).")
@JSON
def audit_list(session: str | None, since: str | None, tool: str | None, decision: str | None, client: str | None,
               limit: int, as_json: bool) -> None:
    """Recorded decisions, newest first, and how many more match.

    Exit status: 0 the decisions listed; 1 the store failed (the reason on stderr, the URL's
    password hidden); 2 a usage or configuration error."""
    toolbox, store = _audit_store()
    try:
        rows, more = recorded_page(store, **_filters(session, since, tool, decision, client), limit=limit,
                                   more_cap=MORE_CAP)
    except click.BadParameter:
        raise
    except Exception as exc:
        store_failure(toolbox, exc)
        return
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        if more:  # stdout stays the rows
            click.echo(more_line(more, limit, "decisions"), err=True)
        return
    if not rows:
        on = toolbox.settings.core.audit.enabled
        click.echo("no decisions recorded" + ("" if on else " ([audit] enabled is false)"))
    for row in rows:
        click.echo(_show(row))
    if more:
        click.echo(more_line(more, limit, "decisions"))


@audit_group.command("tail")
@global_options
@_with_filters
@click.option("-n", "count", default=10, show_default=True, help="Show this many of the newest first.")
@click.option("--follow/--no-follow", default=True, show_default=True, help="Keep printing new decisions.")
@JSON
def audit_tail(session: str | None, since: str | None, tool: str | None, decision: str | None, client: str | None,
               count: int, follow: bool, as_json: bool) -> None:
    """The newest decisions, then each new one as it is recorded (Ctrl-C ends).

    Exit status: 0 the decisions printed; 1 the store failed (the reason on stderr, the URL's
    password hidden); 2 a usage or configuration error."""
    toolbox, store = _audit_store()

    def emit(row: dict[str, Any]) -> None:
        click.echo(json.dumps(row) if as_json else _show(row))
        sys.stdout.flush()

    try:
        filters = _filters(session, since, tool, decision, client)
        rows = recorded(store, **filters, limit=count)
        # the newest by time: the greatest id is where new ones follow on (clocks of processes may differ)
        last = max((row["id"] for row in rows), default=None)
        if last is None:
            last = newest_id(store)
        for row in rows:
            emit(row)
        while follow:
            time.sleep(0.5)
            for row in recorded(store, **filters, limit=1000, after=last):
                emit(row)
                last = row["id"]
    except KeyboardInterrupt:
        return
    except click.BadParameter:
        raise
    except Exception as exc:
        store_failure(toolbox, exc)


@audit_group.command("prune")
@global_options
def audit_prune() -> None:
    """Apply [audit] max_age_days and max_rows now (also done as rows are written).

    Exit status: 0 pruned; 1 the store failed (the reason on stderr, the URL's password hidden); 2 a
    usage or configuration error."""

    toolbox, store = _audit_store()
    config = toolbox.settings.core.audit
    try:
        deleted = prune(store, config.max_age_days, config.max_rows)
    except Exception as exc:
        store_failure(toolbox, exc)
        return
    click.echo(f"deleted {deleted} audit rows (older than {config.max_age_days:g} days or past the newest "
               f"{config.max_rows:,}; 0 means no limit)")

"""``pegboard store``: where durable state lives, and bringing it up to date."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..shared import JSON, global_options
from ..shared import current_state as _state
from ..._services.audit import writer_for
from ..._util.folders import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, data_dir, data_folders, wider_than
from ..._api.checks import Check
from ..._services.store import CORE_COMPONENT, StoreError, sqlite_files

__all__ = ["audit_checks", "file_checks", "migrate", "store_checks", "store_group", "store_report"]


@click.group("store")
def store_group() -> None:
    """The database behind sessions, the audit log and plugins' state."""


def store_report(toolbox: Any) -> dict[str, Any]:
    """URL (redacted), backend, and each component's schema version in the
    database against the version this code knows. Creates nothing."""

    store = toolbox.plugins.stores.store
    report: dict[str, Any] = {"url": store.redacted_url, "source": store.source, "backend": store.backend,
                              "reachable": None, "error": None, "components": []}
    try:
        schemas = toolbox.plugins.schemas()
    except StoreError as exc:
        report["error"] = str(exc)
        return report
    found: dict[str, int] = {}
    if store.exists():
        try:
            found = store.versions()
            report["reachable"] = True
        except StoreError as exc:
            report["reachable"], report["error"] = False, str(exc)
        except Exception as exc:  # the driver's own errors: the database is down or refuses us
            report["reachable"], report["error"] = False, store.describe_error(exc)
    for name, schema in schemas.items():
        have = found.get(name)
        if have is None:
            state = "not created yet (created on first use)"
        elif have == schema.version:
            state = "current"
        elif have < schema.version:
            state = (f"needs upgrade to {schema.version}: run `pegboard store migrate` "
                     "(until then its tables are refused)")
        else:
            state = f"newer than this pegboard ({schema.version}): upgrade pegboard"
        report["components"].append({"component": name, "database": have, "code": schema.version,
                                     "state": state})
    return report


def file_checks(toolbox: Any) -> list[Any]:
    """``pegboard doctor``'s line for files at rest: pegboard's data folders
    0700, the SQLite database, its side files and the audit spool 0600.
    Looked at before the store is opened, since opening it narrows them."""

    base = data_dir()
    folders = data_folders()
    files = _listed((base / "audit-spool").glob("*/*.jsonl"))
    database = toolbox.plugins.stores.store.sqlite_path
    if database is not None:
        files += sqlite_files(database)
        if database.parent.is_relative_to(base):
            folders.append(database.parent)
    wide = [f"{path} ({mode:o}, want {want:o})" for paths, want in ((folders, PRIVATE_DIR_MODE),
                                                                      (files, PRIVATE_FILE_MODE))
            for path in dict.fromkeys(paths) if (mode := wider_than(path, want)) is not None]

    if wide:
        return [Check("files at rest", "warn",
                      f"other users may read or change: {'; '.join(wide)}. pegboard narrows them each time "
                      "it opens the store; if they stay so, chmod 700 the folders and 600 the files")]
    return [Check("files at rest", "ok", f"{base}: folders 0700, the database and audit spool 0600")]


def _listed(paths: Any) -> list[Any]:
    try:
        return sorted(paths)
    except OSError:
        return []


def store_checks(toolbox: Any) -> list[Any]:
    """``pegboard doctor``'s lines for the store: files at rest (before the
    store is opened), reachable, schemas current."""

    at_rest = file_checks(toolbox)
    report = store_report(toolbox)
    where = f"{report['url']} ({report['backend']}, from {report['source']})"
    if report["error"]:
        return [*at_rest, Check("store", "fail", f"{where}: {report['error']}"), *audit_checks(toolbox)]
    if report["reachable"] is None:
        return [*at_rest, Check("store", "ok", f"{where}: not created yet (made when something first uses it)"),
                *audit_checks(toolbox)]
    checks = [Check("store", "ok", f"{where}: reachable")]
    for row in report["components"]:
        if row["database"] is None or row["state"] == "current":
            continue
        # Behind or ahead alike, the store refuses the component's tables until it is fixed.
        checks.append(Check(f"store schema {row['component']}", "fail",
                            f"database {row['database']}, code {row['code']}: {row['state']}"))
    if len(checks) == 1:
        checks[0] = Check("store", "ok", f"{where}: reachable, every schema current")
    return at_rest + checks + audit_checks(toolbox)


def audit_checks(toolbox: Any) -> list[Any]:
    """Whether the audit is on, and whether decisions wait for the store."""

    if not toolbox.settings.core.audit.enabled:
        return [Check("audit", "ok", f"off ([audit] enabled in {toolbox.settings.source_of('audit', 'enabled')})")]

    writer = writer_for(toolbox.plugins.stores(CORE_COMPONENT))
    waiting = 0
    for path in writer.spooled():
        try:
            with open(path, encoding="utf-8") as handle:
                waiting += sum(1 for line in handle if line.strip())
        except OSError:
            continue
    if waiting:
        return [Check("audit", "warn", f"on; {waiting} decisions wait in {writer.spool_dir()} for the store "
                                       "(the next process that reaches it writes them)")]
    return [Check("audit", "ok", "on: every decision is recorded in the store")]


@store_group.command("info")
@global_options
@JSON
def store_info(as_json: bool) -> None:
    """The store's URL (password hidden), backend, and each schema's version.

    Exit status: 0 the store answered; 1 it could not be reached or read (the error line says why);
    2 a usage or configuration error."""
    report = store_report(_state().toolbox())
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"url      {report['url']}   (from {report['source']})")
    click.echo(f"backend  {report['backend']}")
    if report["error"]:
        click.echo(f"error    {report['error']}")
    for row in report["components"]:
        have = row["database"] if row["database"] is not None else "-"
        click.echo(f"schema   {row['component']:<12} database {have:<4} code {row['code']:<4} {row['state']}")
    sys.exit(1 if report["error"] else 0)


def migrate(toolbox: Any) -> dict[str, tuple[int | None, int | None]]:
    """Create missing tables and upgrade older schemas of every loaded
    component: each one's version in the database before and after."""
    store = toolbox.plugins.stores.store
    before = store.versions() if store.exists() else {}
    schemas = toolbox.plugins.schemas()
    for name in schemas:
        toolbox.plugins.stores(name).ready()
    after = store.versions()
    return {name: (before.get(name), after.get(name)) for name in schemas}


@store_group.command("migrate")
@global_options
def store_migrate() -> None:
    """Create missing tables and upgrade older schemas, for every component.

    Exit status: 0 every schema is up to date; 1 the store could not be reached or an upgrade failed
    (the reason on stderr); 2 a usage or configuration error."""

    toolbox = _state().toolbox()
    store = toolbox.plugins.stores.store
    try:
        changes = migrate(toolbox)
    except StoreError as exc:
        click.echo(f"pegboard: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:
        click.echo(f"pegboard: {store.describe_error(exc)}", err=True)
        sys.exit(1)
    click.echo(f"store {store.redacted_url}")
    for name, (was, now) in changes.items():
        change = "created" if was is None else ("current" if was == now else f"upgraded from {was}")
        click.echo(f"  {name:<12} version {now}  {change}")

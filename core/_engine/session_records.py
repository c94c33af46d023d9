"""Durable sessions: a session given an id keeps a record in the store, so
another process can resume it (``Toolbox.session(session_id=...)``,
``pegboard call --session ID``).

What lasts: the session's record (id, parent, project root, when it was made
and last used), its scratchpad entries, and whatever plugins keep under its
id in their tables. What does not: grants "for this session", the mode,
loaded deferred tools, one-time notes, background tasks, added working
directories and plugins' in-memory state (such as files read for Edit).
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._services.store import CORE_COMPONENT, SCHEMA_TABLE
from .._loading.config import data_dir
from .._util.errors import short_error
from .._services.tables import count_upto, pending, scratchpad, sessions

if TYPE_CHECKING:
    from .._services.store import ComponentStore
    from .toolbox import Toolbox

__all__ = ["DurableScratchpad", "SessionRecords", "check_session_id"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PRUNE_EVERY_S = 3600.0


def check_session_id(value: str) -> str:
    """A session id names a folder and a row: letters, digits, ``.``, ``_``
    and ``-``, starting with a letter or digit, at most 64 characters."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValueError(f"{value!r} is not a session id (letters, digits, '.', '_', '-'; at most 64; "
                         "starting with a letter or digit)")
    return value


class SessionRecords:
    """The sessions table and everything keyed by a session id."""

    def __init__(self, toolbox: Toolbox):
        self._toolbox = toolbox
        self._store: ComponentStore = toolbox.plugins.stores(CORE_COMPONENT)

    @property
    def store(self) -> ComponentStore:
        return self._store

    @property
    def toolbox(self) -> Toolbox:
        return self._toolbox

    # --- one session -------------------------------------------------------

    def open(self, session_id: str, parent_id: str | None = None) -> tuple[bool, dict[str, str]]:
        """Create the record, or resume it: (resumed?, scratchpad entries)."""
        from sqlalchemy import select, update

        self.prune_now_and_then()
        now = time.time()
        with self._store.begin() as conn:
            found = conn.execute(select(sessions.c.id).where(sessions.c.id == session_id)).first()
            if found is None:
                conn.execute(sessions.insert().values(id=session_id, parent_id=parent_id,
                                                      root=str(self._toolbox.settings.root),
                                                      created_at=now, last_active=now))
                return False, {}
            conn.execute(update(sessions).where(sessions.c.id == session_id).values(last_active=now))
            entries = conn.execute(select(scratchpad.c.name, scratchpad.c.text)
                                   .where(scratchpad.c.session_id == session_id))
            return True, {name: text for name, text in entries}

    def parent_of(self, session_id: str) -> str | None:
        """The recorded parent of a durable session (None: none, or no such session)."""
        from sqlalchemy import select

        with self._store.begin(read_only=True) as conn:
            return conn.execute(select(sessions.c.parent_id).where(sessions.c.id == session_id)).scalar()

    def touch(self, session_id: str) -> None:
        from sqlalchemy import update

        with self._store.begin() as conn:
            conn.execute(update(sessions).where(sessions.c.id == session_id).values(last_active=time.time()))

    def save_entry(self, session_id: str, name: str, text: str | None) -> None:
        """Write (or, with None, delete) one scratchpad entry."""
        from sqlalchemy import delete

        with self._store.begin() as conn:
            conn.execute(delete(scratchpad).where(scratchpad.c.session_id == session_id,
                                                  scratchpad.c.name == name))
            if text is not None:
                conn.execute(scratchpad.insert().values(session_id=session_id, name=name, text=text,
                                                        updated_at=time.time()))

    # --- every session -----------------------------------------------------

    def listing(self, limit: int | None = None, more_cap: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Durable sessions, most recently used first (the first ``limit``;
        None: every one), with what each holds; and how many more there are
        (counted up to ``more_cap``). What they hold is looked up for the
        sessions shown only."""
        from sqlalchemy import func, select

        query = select(sessions).order_by(sessions.c.last_active.desc())  # its index gives the order
        with self._store.begin(read_only=True) as conn:
            rows = [dict(r._mapping) for r in conn.execute(query.limit(limit) if limit is not None else query)]
            more = count_upto(conn, select(sessions.c.id).offset(len(rows)), more_cap) \
                if limit is not None and len(rows) == limit and more_cap else 0
            ids = [row["id"] for row in rows]
            # a page's ids as parameters; every session's (more than a statement takes) by grouping all
            paged = limit is not None and len(ids) <= 500

            def of(query: Any, column: Any) -> Any:
                return query.where(column.in_(ids)) if paged else query

            pads = {sid: (n, chars) for sid, n, chars in conn.execute(of(
                select(scratchpad.c.session_id, func.count(), func.sum(func.length(scratchpad.c.text))),
                scratchpad.c.session_id).group_by(scratchpad.c.session_id))} if ids else {}
            held: dict[str, dict[str, int]] = {}
            for table in self._session_tables(conn) if ids else ():
                for sid, n in conn.execute(of(select(table.c.session_id, func.count()), table.c.session_id)
                                           .group_by(table.c.session_id)):
                    held.setdefault(sid, {})[table.name] = n
        for row in rows:
            n, chars = pads.get(row["id"], (0, 0))
            row["scratchpad"] = {"entries": n, "chars": int(chars or 0)}
            row["plugin_rows"] = held.get(row["id"], {})
        return rows, more

    def delete(self, session_ids: Iterable[str]) -> tuple[list[str], list[str]]:
        """Delete sessions: tell each plugin (``pegboard_session_deleted``),
        delete their ``session_id`` rows, the scratchpad, the record and the
        session's folder. Returns (deleted ids, problems). The audit log keeps
        its rows: it is a record of what was decided, pruned by its own rules."""
        from sqlalchemy import delete, select

        ids = self._with_children(list(dict.fromkeys(session_ids)))
        problems = self._tell_plugins(ids)
        with self._store.begin() as conn:
            known = {r for (r,) in conn.execute(select(sessions.c.id).where(sessions.c.id.in_(ids)))}
            for table in reversed(self._session_tables(conn)):
                conn.execute(delete(table).where(table.c.session_id.in_(ids)))
            conn.execute(delete(scratchpad).where(scratchpad.c.session_id.in_(ids)))
            conn.execute(delete(pending).where(pending.c.session_id.in_(ids)))
            conn.execute(delete(sessions).where(sessions.c.id.in_(ids)))

        for sid in ids:
            folder = data_dir() / "sessions" / sid
            try:
                shutil.rmtree(folder)
            except FileNotFoundError:
                pass
            except OSError as exc:
                problems.append(f"{folder}: could not delete it: {exc.strerror}")
        return [sid for sid in ids if sid in known], problems

    def _with_children(self, ids: list[str]) -> list[str]:
        """``ids`` and every session made from one of them (``parent_id``),
        however deep: a sub-agent's session goes with the session that made it."""
        from sqlalchemy import select

        found = list(ids)
        frontier = list(ids)
        with self._store.begin(read_only=True) as conn:
            while frontier:
                frontier = [sid for (sid,) in conn.execute(select(sessions.c.id)
                                                            .where(sessions.c.parent_id.in_(frontier)))
                            if sid not in found]
                found += frontier
        return found

    def expired(self, max_age_days: float) -> list[str]:
        from sqlalchemy import select

        cutoff = time.time() - max_age_days * 86400
        with self._store.begin(read_only=True) as conn:
            return [sid for (sid,) in conn.execute(select(sessions.c.id).where(sessions.c.last_active < cutoff))]

    def prune(self) -> tuple[list[str], list[str]]:
        """Delete sessions unused for ``[store] session_max_age_days``."""
        age = self._toolbox.settings.core.store.session_max_age_days
        if not age:
            return [], []
        ids = self.expired(age)
        return self.delete(ids) if ids else ([], [])

    def prune_now_and_then(self) -> None:
        """Expire old sessions when a durable session opens, at most hourly
        per process and store (it is one indexed query when nothing expired)."""
        key = self._store.url
        now = time.monotonic()
        if now - _last_prune.get(key, -PRUNE_EVERY_S) < PRUNE_EVERY_S:
            return
        _last_prune[key] = now
        _deleted, problems = self.prune()
        for problem in problems:
            _report(problem)

    # --- helpers -----------------------------------------------------------

    def _tell_plugins(self, ids: list[str]) -> list[str]:
        plugins = self._toolbox.plugins
        problems = []
        for record in plugins.records.values():
            if record.obj is None:
                continue
            for sid in ids:
                try:
                    plugins.hooks.one(record.obj, "pegboard_session_deleted", session_id=sid,
                                      context=plugins.context(record))
                except Exception as exc:  # one plugin's failure must not keep the others' rows
                    problems.append(f"pegboard_session_deleted of plugin {record.name!r} failed for {sid}: "
                                    f"{short_error(exc)}")
        return problems

    def _session_tables(self, conn: Any) -> list[Any]:
        """Plugins' tables with a ``session_id`` column, read from the
        database itself (so a disabled plugin's rows go too), in dependency
        order. Only tables of components recorded in ``pegboard_schema``."""
        from sqlalchemy import MetaData, inspect, select
        from sqlalchemy import table as light_table, column

        if not inspect(conn).has_table(SCHEMA_TABLE):
            return []
        schema_rows = light_table(SCHEMA_TABLE, column("component"))
        prefixes = tuple(f"{c}_" for (c,) in conn.execute(select(schema_rows.c.component))
                         if c != CORE_COMPONENT)
        if not prefixes:
            return []
        metadata = MetaData()
        metadata.reflect(conn, only=lambda name, _md: name.startswith(prefixes))
        return [t for t in metadata.sorted_tables if "session_id" in t.c]


_last_prune: dict[str, float] = {}


def _report(text: str) -> None:
    import sys

    print(f"pegboard: {text}", file=sys.stderr)


class DurableScratchpad(dict[str, str]):
    """A durable session's scratchpad: a dict whose writes also go to the
    store. A write the store refuses stays in memory and is reported on
    stderr (the call that saved it has done its work)."""

    def __init__(self, records: SessionRecords, session_id: str, entries: dict[str, str]):
        super().__init__(entries)
        self._records = records
        self._session_id = session_id

    def __setitem__(self, name: str, text: str) -> None:
        super().__setitem__(name, text)
        self._save(name, text)

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self._save(name, None)

    def _save(self, name: str, text: str | None) -> None:
        try:
            self._records.save_entry(self._session_id, name, text)
        except Exception as exc:
            _report(f"scratchpad entry {name!r} of session {self._session_id} was not saved to the store "
                    f"({self._records.store.describe_error(exc)})")  # never SQLAlchemy's [parameters: ...]

"""The audit log: every permission decision, written without slowing or
failing the call it records.

``AuditLog.record`` (called by the permission engine with its final
decision) builds a row and hands it to the process's writer for that store:
a background thread that inserts rows in batches, a few times a second. The
call never waits on the database. A store that refuses rows is reported once
on stderr (and by ``pegboard doctor``); the rows wait in memory and are
retried, and whatever is still unwritten when the process exits, or past a
bound in memory, goes to a spool file beside the data dir that the next
writer of the same store loads first. A process killed outright loses at
most the rows of its last flush interval (``FLUSH_INTERVAL_S``).
"""

from __future__ import annotations

import atexit
import collections
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util.redact import redact  # re-exported: one redaction for the audit and every other output
from .._util.atomic import atomic_write
from .._util.folders import data_dir, private_dir
from .._util.path_facts import resolve_path
from .tables import audit, count_upto, ensure_indexes

if TYPE_CHECKING:
    from .._api.decisions import Decision, PermissionRequest
    from .._engine.session import Session
    from .store import ComponentStore

__all__ = ["AuditLog", "newest_first", "newest_id", "preview", "recorded", "recorded_page", "redact", "source_kind",
           "writer_for"]

FLUSH_INTERVAL_S = 0.2
BATCH_ROWS = 500
MAX_QUEUED_ROWS = 50_000      # past this, rows go to the spool file instead of memory
EXIT_FLUSH_S = 10.0
PRUNE_EVERY_S = 600.0
FIELD_CHARS = 120             # each non-path string field of the preview
# Input fields shown whole, as paths: by the convention of their names
# (``file_path``, ``path``, ``paths``, ``cwd``, ...), not a list of one plugin's fields.
_PATH_SUFFIXES = ("path", "paths")
_PATH_NAMES = frozenset({"cwd", "directory", "dir"})


def _is_path_field(key: object) -> bool:
    return isinstance(key, str) and (key.endswith(_PATH_SUFFIXES) or key in _PATH_NAMES)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…(+{len(text) - limit:,} chars)"


def preview(arguments: Any, limit: int) -> str:
    """A short, redacted picture of a call's input: ``key=value`` pairs,
    paths whole, every other string through ``redact`` and clipped to
    ``FIELD_CHARS``, the whole clipped to ``limit`` characters."""
    if limit <= 0:
        return ""
    if not isinstance(arguments, dict):
        return _clip(redact(json.dumps(arguments, default=str)), limit)
    parts = []
    for key, value in arguments.items():
        if value is None:
            continue  # an option left at its default says nothing about the call
        if isinstance(value, str):
            shown = value if _is_path_field(key) else _clip(redact(value), FIELD_CHARS)
            parts.append(f"{key}={json.dumps(shown, ensure_ascii=False)}")
        elif value is None or isinstance(value, (bool, int, float)):
            parts.append(f"{key}={json.dumps(value)}")
        else:
            text = json.dumps(value, default=str, ensure_ascii=False)
            parts.append(f"{key}={text if _is_path_field(key) else _clip(redact(text), FIELD_CHARS)}")
    return _clip(" ".join(parts), limit)


def digest(arguments: Any) -> str:
    """sha256 of the input as canonical JSON: proves which input it was
    without keeping it."""
    try:
        raw = _canonical(arguments)
    except (TypeError, ValueError):  # a value JSON does not know: its text stands in
        raw = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def source_kind(source: str) -> str:
    """What kind of thing decided: rule, plugin, person, classifier, host
    (asking it failed) or policy (the mode or level itself)."""
    if source.startswith("rule "):
        return "rule"
    if source.startswith("plugin "):
        return "plugin"
    if source in ("person", "classifier", "host"):
        return source
    return "policy"


# --- recording ---------------------------------------------------------------------


class AuditLog:
    """Records decisions for one toolbox (``[audit] enabled = true``)."""

    def __init__(self, store: ComponentStore, preview_chars: int, max_age_days: float, max_rows: int):
        self._writer = writer_for(store)
        self._writer.retention = (max_age_days, max_rows)
        self._preview_chars = preview_chars
        self._pid = os.getpid()

    def record(self, request: PermissionRequest, decision: Decision) -> None:
        """Queue the row; never raises (a failure is reported on stderr)."""
        try:
            session: Session = request.session  # type: ignore[assignment]  # the engine decides its own sessions' calls
            arguments = dict(request.input)
            answer = request.extra.get("answer")
            self._writer.put({
                "at": time.time(),
                "session_id": session.id,
                "parent_id": session.parent_id,
                "call_id": request.extra.get("call_id"),
                "tool": request.tool.name,
                "decision": decision.decision,
                "reason": decision.reason,
                "source": decision.source,
                "source_kind": source_kind(decision.source),
                "mode": request.policy.name,
                "answer": answer[0] if answer else None,
                "host": answer[1] if answer else None,
                "input_digest": digest(arguments),
                "input_preview": preview(arguments, self._preview_chars),
                "pid": self._pid,
                "client": session.client.id if session.client is not None else None,
            })
        except Exception as exc:  # the call must get its decision whatever happens here
            _say(f"pegboard: could not record a decision in the audit log: {type(exc).__name__}: "
                 f"{redact(str(exc))}")  # an error about the row may quote the call's input

    def flush(self, timeout: float = EXIT_FLUSH_S) -> bool:
        return self._writer.flush(timeout)


def _say(text: str) -> None:
    try:
        print(text, file=sys.stderr, flush=True)
    except Exception:
        pass


class _Writer:
    """One per store and process: a queue and the thread that drains it."""

    def __init__(self, store: ComponentStore):
        self.store = store
        self.retention: tuple[float, int] = (0, 0)
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._wake = threading.Event()
        self._flush_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._pid = os.getpid()
        self.written = 0
        self.error: str | None = None
        self._last_prune = 0.0
        self._spool_loaded = False

    # --- the calling side ---------------------------------------------------

    def put(self, row: dict[str, Any]) -> None:
        self._queue.append(row)
        if self._thread is None or self._pid != os.getpid():
            self._start()
        if len(self._queue) >= BATCH_ROWS:
            self._wake.set()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None and self._pid == os.getpid():
                return
            self._pid = os.getpid()  # after a fork, the child needs a thread of its own
            self._thread = threading.Thread(target=self._run, name="pegboard-audit", daemon=True)
            self._thread.start()

    def pending(self) -> int:
        return len(self._queue)

    # --- the writing side ---------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(FLUSH_INTERVAL_S if self.error is None else min(5.0, FLUSH_INTERVAL_S * 10))
            self._wake.clear()
            try:
                self._flush_some()
            except Exception as exc:  # never let the thread die: the next round retries
                self._failed(exc)

    def flush(self, timeout: float = EXIT_FLUSH_S, tries: int = 3) -> bool:
        """Write everything queued now, giving up after ``timeout`` seconds
        or ``tries`` refusals in a row; True when nothing is left."""
        deadline = time.monotonic() + timeout
        refused = 0
        while self._queue and time.monotonic() < deadline and refused < tries:
            if self._flush_some():
                refused = 0
            else:
                refused += 1
                time.sleep(0.2)
        with self._flush_lock:  # a batch the thread took is in no queue: wait until it is written
            return not self._queue

    def _flush_some(self) -> bool:
        """One batch; False when the store refused it (rows kept)."""
        with self._flush_lock:
            if not self._spool_loaded:
                self._load_spool()
            batch: list[dict[str, Any]] = []
            while self._queue and len(batch) < BATCH_ROWS:
                batch.append(self._queue.popleft())
            if not batch:
                return True
            try:
                self._insert(batch)
            except Exception as exc:
                self._queue.extendleft(reversed(batch))
                self._failed(exc)
                if len(self._queue) > MAX_QUEUED_ROWS:
                    self._spill(self._take_all())
                return False
            self.written += len(batch)
            if self.error is not None:
                _say(f"pegboard: the audit log is being written again to {self.store.url}")
                self.error = None
            self._maybe_prune()
            return True

    def _insert(self, batch: list[dict[str, Any]]) -> None:
        """One transaction per batch, at the driver's own speed where it has
        one (COPY on psycopg, executemany on sqlite3: SQLAlchemy's insert
        costs twice as much per row, in the process whose calls it records)."""

        columns = [c.name for c in audit.columns if c.name != "id"]
        values = [tuple(row.get(name) for name in columns) for row in batch]
        with self.store.begin() as conn:
            driver = conn.dialect.driver
            if driver == "psycopg":
                cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                with cursor.copy(f"COPY {audit.name} ({', '.join(columns)}) FROM STDIN") as copy:
                    for value in values:
                        copy.write_row(value)
            elif driver == "pysqlite":
                marks = ", ".join("?" * len(columns))
                conn.exec_driver_sql(f"INSERT INTO {audit.name} ({', '.join(columns)}) VALUES ({marks})", values)
            else:
                conn.execute(audit.insert(), batch)

    def _failed(self, exc: BaseException) -> None:
        text = self.store.describe_error(exc)
        if self.error is None:
            _say(f"pegboard: the audit log cannot be written ({text}); {len(self._queue)} decisions are "
                 "kept and retried (pegboard doctor shows the store)")
        self.error = text

    def _take_all(self) -> list[dict[str, Any]]:
        rows = []
        while self._queue:
            rows.append(self._queue.popleft())
        return rows

    # --- the spool: rows the store refused, kept on disk ---------------------

    def spool_dir(self) -> Path:
        key = hashlib.sha256(self.store.url.encode()).hexdigest()[:16]
        return data_dir() / "audit-spool" / key

    def _spill(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        folder = self.spool_dir()
        try:
            private_dir(folder)
            path = folder / f"{os.getpid()}-{time.time_ns()}.jsonl"

            atomic_write(resolve_path(path, folder), "".join(json.dumps(row) + "\n" for row in rows),
                         default_mode=0o600)
            _say(f"pegboard: {len(rows)} audit rows the store refused are kept in {path}; the next process "
                 "that reaches the store writes them")
        except OSError as exc:
            _say(f"pegboard: {len(rows)} audit rows were lost: the store refused them and {folder} could not be "
                 f"written ({exc.strerror})")

    def spooled(self) -> list[Path]:
        try:
            return sorted(self.spool_dir().glob("*.jsonl"))
        except OSError:
            return []

    def _load_spool(self) -> None:
        """Write spooled rows first (each file under a lock, so two
        processes never load one file twice); stop at the first refusal."""
        for path in self.spooled():
            try:
                with open(path, "r+", encoding="utf-8") as handle:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue
                    if not os.path.exists(path):
                        continue  # loaded and removed by another process meanwhile
                    rows = [json.loads(line) for line in handle if line.strip()]
                    for start in range(0, len(rows), BATCH_ROWS):
                        self._insert(rows[start:start + BATCH_ROWS])
                    os.unlink(path)
                    self.written += len(rows)
            except FileNotFoundError:
                continue
            except Exception as exc:
                self._failed(exc)
                return
        self._spool_loaded = True

    # --- retention --------------------------------------------------------------

    def _maybe_prune(self) -> None:
        now = time.monotonic()
        if now - self._last_prune < PRUNE_EVERY_S and self._last_prune:
            return
        self._last_prune = now
        try:
            prune(self.store, *self.retention)
        except Exception as exc:
            _say(f"pegboard: pruning the audit log failed: {self.store.describe_error(exc)}")

    def at_exit(self) -> None:
        if self._pid != os.getpid():
            return
        if not self.flush(EXIT_FLUSH_S):
            self._spill(self._take_all())


# --- reading -------------------------------------------------------------------------


def recorded(store: ComponentStore, *, session: str | None = None, since: float | None = None, tool: str | None = None,
             decision: str | None = None, limit: int = 100, after: int | None = None,
             client: str | None = None) -> list[dict[str, Any]]:
    """Recorded decisions, oldest first: the newest ``limit`` that match (or,
    with ``after``, the first ``limit`` with a greater id)."""
    from sqlalchemy import select

    ensure_indexes(store, audit)
    filters = _filters(session, since, tool, decision, client)
    if after is not None:
        query = select(audit).where(*filters, audit.c.id > after).order_by(audit.c.id).limit(limit)
    else:
        query = newest_first(select(audit), filters).limit(limit)
    with store.begin(read_only=True) as conn:
        rows = [dict(r._mapping) for r in conn.execute(query)]
    return rows if after is not None else rows[::-1]


def recorded_page(store: ComponentStore, *, session: str | None = None, since: float | None = None,
                  tool: str | None = None, decision: str | None = None, limit: int = 100,
                  more_cap: int = 10_000, client: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """The newest ``limit`` decisions that match, newest first, and how many
    more match (counted no further than ``more_cap``)."""
    from sqlalchemy import select

    ensure_indexes(store, audit)
    filters = _filters(session, since, tool, decision, client)
    with store.begin(read_only=True) as conn:
        rows = [dict(r._mapping) for r in conn.execute(newest_first(select(audit), filters).limit(limit))]
        more = count_upto(conn, newest_first(select(audit.c.id), filters).offset(limit), more_cap) \
            if len(rows) == limit and more_cap else 0
    return rows, more


def _filters(session: str | None, since: float | None, tool: str | None, decision: str | None,
             client: str | None = None) -> list[Any]:
    filters: list[Any] = [column == value for column, value in ((audit.c.session_id, session), (audit.c.tool, tool),
                                                                (audit.c.decision, decision), (audit.c.client, client))
                          if value]
    if since is not None:
        filters.append(audit.c.at >= since)
    return filters


def newest_first(query: Any, filters: list[Any]) -> Any:
    """``query`` on the audit table with ``filters``, newest first: by time,
    so that each filter's index (the session, the tool, the decision, each
    with the time; the time alone) gives the rows in order, and a filter
    that matches nothing finds so at once (``ensure_indexes`` makes any an
    older database lacks)."""

    return query.where(*filters).order_by(audit.c.at.desc(), audit.c.id.desc())


def newest_id(store: ComponentStore) -> int:
    """The id of the newest recorded decision (0: none)."""
    from sqlalchemy import func, select

    with store.begin(read_only=True) as conn:
        return int(conn.execute(select(func.max(audit.c.id))).scalar() or 0)


def prune(store: ComponentStore, max_age_days: float, max_rows: int) -> int:
    """Delete rows older than ``max_age_days`` and past the newest
    ``max_rows`` (0: no limit); the number deleted."""
    from sqlalchemy import delete, select

    deleted = 0
    with store.begin() as conn:
        if max_age_days:
            deleted += conn.execute(delete(audit).where(audit.c.at < time.time() - max_age_days * 86400)).rowcount
        if max_rows:
            cutoff = conn.execute(select(audit.c.id).order_by(audit.c.id.desc())
                                  .offset(max_rows).limit(1)).scalar()
            if cutoff is not None:
                deleted += conn.execute(delete(audit).where(audit.c.id <= cutoff)).rowcount
    return deleted


_writers: dict[str, _Writer] = {}
_writers_lock = threading.Lock()


def writer_for(store: ComponentStore) -> _Writer:
    with _writers_lock:
        writer = _writers.get(store.url)
        if writer is None:
            writer = _writers[store.url] = _Writer(store)
        return writer


def flush_all(timeout: float = EXIT_FLUSH_S) -> None:
    """Write every queued row now (tests; a host about to exit)."""
    with _writers_lock:
        writers = list(_writers.values())
    for writer in writers:
        writer.flush(timeout)


@atexit.register
def _at_exit() -> None:
    with _writers_lock:
        writers = list(_writers.values())
    for writer in writers:
        try:
            writer.at_exit()
        except Exception as exc:
            _say(f"pegboard: the audit log could not be finished: {type(exc).__name__}: {exc}")

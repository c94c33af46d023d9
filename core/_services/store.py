"""The store: durable state on SQLAlchemy, shared by the core and plugins.

One database per ``[store] url`` (default: a SQLite file in pegboard's data
dir). The core and every plugin own their own tables, each set declared as a
``StoreSchema`` with a version and the steps that bring an older database up
to it (a small versioned-steps helper rather than Alembic: Alembic keeps one
version per database and a script folder per application, where pegboard
needs one version per plugin, upgrades that ship inside each plugin's wheel,
and nothing imported until the store is used).

Nothing here imports SQLAlchemy until a database is really opened, so a
toolbox that never touches the store costs a small object, not an import.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._util.redact import redact_url
from .._util.folders import PRIVATE_FILE_MODE, data_dir, narrow_data_dir, private_dir, tighten

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, MetaData

    from .._loading.config import Settings
    from .._api.plugin_context import StoreSchema

__all__ = ["CORE_COMPONENT", "ComponentStore", "Store", "StoreError", "Stores", "dispose_all",
           "redact_url", "store_for"]

T = TypeVar("T")

CORE_COMPONENT = "pegboard"
SCHEMA_TABLE = "pegboard_schema"
DEFAULT_FILE = "pegboard.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000


class StoreError(Exception):
    """The store cannot be opened, or its schema does not fit this pegboard.
    The message names the (redacted) URL and what to do."""


SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def sqlite_files(path: Path) -> list[Path]:
    """A SQLite database and the files SQLite keeps beside it."""
    return [path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)]


def make_private(path: Path) -> None:
    """Before SQLite opens ``path``: its folder 0700 (and pegboard's data dir
    with it), the database made 0600 if missing and narrowed to 0600 if
    wider, and so its side files, at every start. SQLite gives a new ``-wal``
    and ``-shm`` the database's own mode, so a 0600 database keeps them 0600
    without touching the process's umask (which other threads share)."""

    private_dir(path.parent)
    if not os.path.lexists(path):
        # Only a file not there yet is opened here: closing any descriptor of a database
        # drops the POSIX locks this process's connections hold on it.
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             PRIVATE_FILE_MODE))
        except OSError:
            pass  # made meanwhile, or not makeable: SQLite's own open says what is wrong, with the URL
    for file in sqlite_files(path):
        tighten(file, PRIVATE_FILE_MODE)


def _raw_at_in_password(url: str) -> bool:
    """More than one @ in the URL's authority (before its path or query)."""
    rest = url.split("://", 1)
    if len(rest) != 2:
        return False
    authority = rest[1].split("/", 1)[0].split("?", 1)[0]
    return authority.count("@") > 1


def _normalise(url: str) -> str:
    # Without a driver SQLAlchemy picks psycopg2, which pegboard does not use.
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url[len(bare):]
    return url


def default_url() -> str:
    return f"sqlite:///{data_dir() / DEFAULT_FILE}"


class Store:
    """One database: the engine (made on first use), and which schemas this
    process has already brought up to date.

    ``Store`` objects are shared per URL within a process (``store_for``), so
    every toolbox and session of a process uses one connection pool.
    """

    def __init__(self, url: str, source: str = "defaults"):
        self.url = _normalise(url)
        self.ambiguous = _raw_at_in_password(self.url)
        self.source = source
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        # Each component's schema version this process has seen in the database: a second
        # toolbox with a newer plugin (same URL, same process) differs from it and is checked again.
        self._current: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Store({redact_url(self.url)!r})"

    @property
    def redacted_url(self) -> str:
        return redact_url(self.url)

    @property
    def backend(self) -> str:
        """``"sqlite"``, ``"postgresql"``, or the dialect's name."""
        scheme = self.url.split(":", 1)[0]
        return scheme.split("+", 1)[0]

    @property
    def sqlite_path(self) -> Path | None:
        if self.backend != "sqlite":
            return None
        rest = self.url.split(":///", 1)
        if len(rest) != 2 or not rest[1] or rest[1].startswith(":memory:"):
            return None
        return Path(rest[1].split("?", 1)[0])

    def exists(self) -> bool:
        """False for a SQLite file not created yet (a server database is
        assumed to exist: only connecting can tell)."""
        path = self.sqlite_path
        return path is None or path.exists()

    # --- the engine ----------------------------------------------------------

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._create_engine()
        return self._engine

    def _create_engine(self) -> Engine:
        try:
            import sqlalchemy
            from sqlalchemy import event
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise StoreError(f"the store needs SQLAlchemy: {exc}") from None

        narrow_data_dir()  # sessions' files and the audit spool live there, whatever the backend
        if self.ambiguous:
            # SQLAlchemy ends the password at its first @ and takes the rest for the host, which
            # every connection error would then quote: refused before anything is tried.
            raise StoreError(f"{self.redacted_url} (from {self.source}): the password holds a raw '@'; "
                             "write it as %40 (every reserved character of a password %-encoded)")
        kwargs: dict[str, Any] = {}
        if self.backend == "sqlite":
            path = self.sqlite_path
            if path is not None:
                make_private(path)
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
        elif self.backend == "postgresql":
            kwargs["pool_pre_ping"] = True
            kwargs["connect_args"] = {"connect_timeout": 5}
        try:
            engine = sqlalchemy.create_engine(self.url, **kwargs)
        except ImportError as exc:
            hint = " (pip install 'pegboard[postgresql]' for psycopg)" if self.backend == "postgresql" else ""
            raise StoreError(f"{self.redacted_url} (from {self.source}): its driver is not installed: "
                             f"{exc}{hint}") from None
        except Exception as exc:
            raise StoreError(f"{self.redacted_url} (from {self.source}): not a usable database URL: "
                             f"{redact_url(str(exc))}") from None
        if self.backend == "sqlite":
            _tune_sqlite(engine, event)
        return engine

    def dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
            self._current.clear()

    def describe_error(self, exc: BaseException) -> str:
        """An exception from the database, as one line an operator can act on
        (never with the password)."""
        text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        first = text[0] if text else type(exc).__name__
        return redact_url(f"{self.redacted_url}: {type(exc).__name__}: {first}").replace(
            self.url, self.redacted_url)

    # --- transactions --------------------------------------------------------

    @contextmanager
    def begin(self, *, read_only: bool = False) -> Iterator[Connection]:
        """A connection inside one transaction: committed when the block
        ends, rolled back when it raises. On SQLite a writing transaction
        takes the write lock at its start (``BEGIN IMMEDIATE``), so two
        processes never deadlock upgrading a read to a write."""
        conn = self.engine.connect()
        try:
            if read_only:
                conn = conn.execution_options(pegboard_read_only=True)
            with conn.begin():
                yield conn
        finally:
            conn.close()

    # --- schemas -------------------------------------------------------------

    def ensure(self, component: str, schema: StoreSchema, *, upgrade: bool = False) -> None:
        """Make the component's tables usable at ``schema.version``, once per
        process and version: create them when the database has none (nothing
        to lose), run the upgrade steps only with ``upgrade`` (``pegboard
        store migrate``, ``PluginStore.ready()``). A database behind the code
        is otherwise refused, naming ``pegboard store migrate``; one newer
        than the code is always refused: old code on it could lose data.

        Under a lock (PostgreSQL: an advisory lock; SQLite: the write lock),
        so processes starting together upgrade once."""
        if self._current.get(component) == schema.version:
            return
        problems = schema.problems(component)
        if problems:
            raise StoreError(f"the store schema of {component!r} is not valid: {'; '.join(problems)}")
        from sqlalchemy import select, update

        table = _schema_table()
        with self.begin() as conn:
            self._lock_schemas(conn)
            table.create(conn, checkfirst=True)
            found = conn.execute(select(table.c.version).where(table.c.component == component)).scalar()
            if found is not None and (found > schema.version or (found < schema.version and not upgrade)):
                self._refuse_mismatch(component, found, schema.version)
            if found is not None and found < schema.version:
                for step in range(found + 1, schema.version + 1):
                    change = schema.upgrades[step]
                    if change is not None:  # None: the version only adds tables
                        change(conn)
            schema.metadata.create_all(conn, checkfirst=True)
            if found is not None:
                _add_missing_columns(conn, schema.metadata)
            if found is None:
                conn.execute(table.insert().values(component=component, version=schema.version,
                                                   updated_at=time.time()))
            elif found != schema.version:
                conn.execute(update(table).where(table.c.component == component)
                             .values(version=schema.version, updated_at=time.time()))
        self._current[component] = schema.version

    def verify(self, component: str, schema: StoreSchema) -> None:
        """For a read-only transaction: the database must hold the component
        at ``schema.version``. Nothing is upgraded (a database behind the code
        is refused, naming ``pegboard store migrate``); tables never created
        are created, as there is nothing in them to change."""
        if self._current.get(component) == schema.version:
            return
        found = self.versions().get(component)
        if found is None:
            self.ensure(component, schema)
            return
        if found != schema.version:
            self._refuse_mismatch(component, found, schema.version)
        with self.begin(read_only=True) as conn:
            missing = _missing_columns(conn, schema.metadata)
        if missing:
            self.ensure(component, schema)  # writes: only the columns were missing
            return
        self._current[component] = schema.version

    def _refuse_mismatch(self, component: str, found: int, code: int) -> None:
        if found > code:
            raise StoreError(f"{self.redacted_url}: {component} tables are at schema version {found}, "
                             f"newer than this pegboard knows ({code}); upgrade pegboard")
        raise StoreError(f"{self.redacted_url}: {component} tables are at schema version {found}, behind "
                         f"this code's {code}: run `pegboard store migrate` to upgrade them")

    def versions(self) -> dict[str, int]:
        """Each component's schema version in the database (empty when the
        store holds no tables yet)."""
        from sqlalchemy import inspect, select

        table = _schema_table()
        with self.begin(read_only=True) as conn:
            if not inspect(conn).has_table(SCHEMA_TABLE):
                return {}
            return {c: v for c, v in conn.execute(select(table.c.component, table.c.version))}

    def _lock_schemas(self, conn: Connection) -> None:
        if self.backend == "postgresql":
            from sqlalchemy import text

            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})


def _missing_columns(conn: Connection, metadata: MetaData) -> list[tuple[Any, Any]]:
    """(table, column) for each nullable column ``metadata`` declares that an
    existing table lacks."""
    from sqlalchemy import inspect

    inspector = inspect(conn)
    out = []
    for table in metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue  # made whole by create_all
        present = {c["name"] for c in inspector.get_columns(table.name)}
        out += [(table, column) for column in table.columns if column.name not in present and column.nullable]
    return out


def _add_missing_columns(conn: Connection, metadata: MetaData) -> None:
    """Additive columns, without a version step: a nullable column a
    component declares and its existing table lacks is added on first use.
    A database at the same version keeps working with older code (which
    names its columns and leaves the new one empty); no one has to run
    ``pegboard store migrate`` for a column that only adds."""
    from sqlalchemy.schema import CreateColumn

    for table, column in _missing_columns(conn, metadata):
        spec = CreateColumn(column).compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE {conn.dialect.identifier_preparer.format_table(table)} ADD COLUMN {spec}")


# Any fixed number: the advisory lock that serialises schema upgrades.
_LOCK_KEY = 0x7065_6762


def _tune_sqlite(engine: Engine, event: Any) -> None:
    """WAL (readers never wait for the writer), a busy timeout (writers wait
    for each other instead of failing), and transactions that begin as the
    caller asked (pysqlite's own BEGIN handling is switched off)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        read_only = conn.get_execution_options().get("pegboard_read_only", False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


_SCHEMA_TABLE: Any = None


def _schema_table() -> Any:
    global _SCHEMA_TABLE
    if _SCHEMA_TABLE is None:
        from sqlalchemy import Column, Float, Integer, MetaData, String, Table

        _SCHEMA_TABLE = Table(SCHEMA_TABLE, MetaData(),
                              Column("component", String(100), primary_key=True),
                              Column("version", Integer, nullable=False),
                              Column("updated_at", Float, nullable=False))
    return _SCHEMA_TABLE


_stores: dict[str, Store] = {}
_stores_lock = threading.Lock()


def dispose_all() -> None:
    """Close every pool this process opened (tests; a host shutting down)."""
    with _stores_lock:
        stores = list(_stores.values())
        _stores.clear()
    for store in stores:
        store.dispose()


def store_for(settings: Settings) -> Store:
    """The process's ``Store`` for ``[store] url`` (made, not opened)."""
    configured = settings.core.store.url
    url = _normalise(configured) if configured else default_url()
    source = settings.source_of("store", "url") if configured else "defaults"
    with _stores_lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = Store(url, source)
    return store


class ComponentStore:
    """One component's way into the store: ``context.store`` for a plugin,
    ``ctx.store`` in a tool handler (the contract's ``PluginStore``).

    Its tables (from ``pegboard_store_schema``) are created the first time
    ``engine``, ``begin`` or ``run`` is used; an older version in the
    database is upgraded only by ``ready()`` (``pegboard store migrate``). The engine is
    synchronous; async code uses ``await store.run(fn)``, which runs
    ``fn(connection)`` in one transaction on a worker thread so the event
    loop never waits on the database.
    """

    def __init__(self, store: Store, component: str, schema: Callable[[], StoreSchema | None]):
        self._store = store
        self.component = component
        """The plugin (or ``"core"``) whose tables these are."""
        self._schema_of = schema
        self._schema: tuple[StoreSchema | None] | None = None

    def __repr__(self) -> str:
        return f"ComponentStore({self.component!r}, {self._store.redacted_url!r})"

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"`` (or another SQLAlchemy dialect's name)."""
        return self._store.backend

    @property
    def url(self) -> str:
        """The store's URL with any password hidden: safe to show."""
        return self._store.redacted_url

    def describe_error(self, exc: BaseException) -> str:
        """A database error as one line for an operator, password hidden."""
        return self._store.describe_error(exc)

    def exists(self) -> bool:
        """False for a SQLite file not created yet, so a health check can say
        "nothing stored yet" without creating it (a server database is
        assumed to exist: only connecting can tell)."""
        return self._store.exists()

    @property
    def schema(self) -> StoreSchema | None:
        """What ``pegboard_store_schema`` declared (None: no tables)."""
        if self._schema is None:
            self._schema = (self._schema_of(),)
        return self._schema[0]

    def ready(self) -> None:
        """Create this component's tables, or upgrade them from an older
        version, now (what ``pegboard store migrate`` does)."""
        schema = self.schema
        if schema is not None:
            self._store.ensure(self.component, schema, upgrade=True)

    def _usable(self, *, read_only: bool) -> None:
        # Every use checks (cheap once the process knows the version): tables missing are
        # created; a database behind the code is refused, never upgraded behind the operator's back.
        schema = self.schema
        if schema is None:
            return
        if read_only:
            self._store.verify(self.component, schema)
        else:
            self._store.ensure(self.component, schema)

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (synchronous), the tables created first (a database behind the
        code is refused); prefer ``begin`` or ``run``."""
        self._usable(read_only=False)
        return self._store.engine

    @contextmanager
    def begin(self, *, read_only: bool = False) -> Iterator[Connection]:
        """``with store.begin() as conn:``: one transaction, committed at the
        end of the block, rolled back if it raises. ``read_only=True`` lets
        SQLite readers run beside a writer, and never creates or upgrades
        anything but a component's first tables. A database behind this
        code's schema is refused (``StoreError`` naming ``pegboard store
        migrate``), for reads and writes alike."""
        self._usable(read_only=read_only)
        with self._store.begin(read_only=read_only) as conn:
            yield conn

    async def run(self, fn: Callable[..., T], *args: Any, read_only: bool = False) -> T:
        """``fn(connection, *args)`` in one transaction, on a worker thread."""

        def work() -> T:
            with self.begin(read_only=read_only) as conn:
                return fn(conn, *args)

        import asyncio  # here, not at the top: start-up never needs it

        return await asyncio.to_thread(work)


class Stores:
    """A toolbox's way to the store: each component's ``PluginStore``, made
    on first use; nothing is opened (or imported) before that."""

    def __init__(self, settings: Settings, schema_of: Callable[[str], StoreSchema | None]):
        self._settings = settings
        self._schema_of = schema_of
        self._handles: dict[str, ComponentStore] = {}

    @property
    def store(self) -> Store:
        return store_for(self._settings)

    def __call__(self, component: str) -> ComponentStore:
        handle = self._handles.get(component)
        if handle is None:
            handle = self._handles[component] = ComponentStore(self.store, component,
                                                            lambda: self._schema_of(component))
        return handle

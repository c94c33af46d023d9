"""The memory files in the store: one row per file of ``memory_files``, in
sets (``memory_spaces``) of one person, or of one person and project.

Folders are not rows: a folder is there while a file lies below it, as in
the paths the model writes.

Every change runs in one transaction that first takes its set's row in
``memory_spaces`` for writing (an ``UPDATE`` of its revision: on PostgreSQL
the row lock waits for any other writer of the same set; SQLite's writing
transactions take the database's write lock when they begin). Reading,
changing and writing a file therefore never interleave with another
writer's, in any process: two edits of one file both land, in turn, and an
edit that no longer applies to what the other left is refused with its
reason, never written over it. Sizes are counted under the same lock, so
two writers cannot both pass the limits.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pegboard import StoreSchema

__all__ = ["FILES", "SPACES", "Entry", "Limits", "Space", "TooBig", "delete_keys", "entries", "lock", "move_keys",
           "read_file", "spaces_of", "store_schema", "write_file"]

FILES = "memory_files"
SPACES = "memory_spaces"


def store_schema() -> StoreSchema:
    from sqlalchemy import Column, Float, Integer, MetaData, PrimaryKeyConstraint, String, Table, Text

    from pegboard import StoreSchema

    metadata = MetaData()
    Table(SPACES, metadata,
          Column("person", String(128), nullable=False),
          # "" for the person's own set; a project's: a digest of its root
          Column("project", String(64), nullable=False),
          Column("project_root", Text, nullable=True),
          # taken (raised by one) by every change: the lock writers of a set wait on
          Column("revision", Integer, nullable=False),
          Column("updated_at", Float, nullable=False),
          PrimaryKeyConstraint("person", "project"))
    Table(FILES, metadata,
          Column("person", String(128), nullable=False),
          Column("project", String(64), nullable=False),
          # below /memories, without the leading slash: notes/style.md
          Column("path", String(1024), nullable=False),
          Column("content", Text, nullable=False),
          Column("size", Integer, nullable=False),
          Column("created_at", Float, nullable=False),
          Column("updated_at", Float, nullable=False),
          # the session whose call last wrote it (not session_id: memories outlive sessions)
          Column("updated_by", String(255), nullable=True),
          PrimaryKeyConstraint("person", "project", "path"))
    return StoreSchema(metadata=metadata, version=1)


@dataclass(frozen=True)
class Space:
    """One set of memories: a person's, or a person's in one project."""

    person: str
    project: str = ""
    """"" for the person's own set; else a digest of the project root."""
    project_root: str | None = None
    """The project root, shown to the person (None for the person's own set)."""

    def describe(self) -> str:
        return f"{self.person}'s memories" + (f" in {self.project_root}" if self.project_root else "")


@dataclass(frozen=True)
class Entry:
    """A file as listings show it."""

    path: str
    size: int
    updated_at: float
    updated_by: str | None = None


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_total_bytes: int
    max_files: int


class TooBig(Exception):
    """A write the limits refuse; the message is for the model (or the person)."""


def _files() -> Any:
    from sqlalchemy import column, table

    return table(FILES, column("person"), column("project"), column("path"), column("content"), column("size"),
                 column("created_at"), column("updated_at"), column("updated_by"))


def _spaces() -> Any:
    from sqlalchemy import column, table

    return table(SPACES, column("person"), column("project"), column("project_root"), column("revision"),
                 column("updated_at"))


def _in(rows: Any, space: Space) -> Any:
    from sqlalchemy import and_

    return and_(rows.c.person == space.person, rows.c.project == space.project)


def lock(conn: Any, space: Space) -> None:
    """Take ``space``'s row for this transaction (made when missing); every
    writer of the set waits here for the one before it to commit."""
    from sqlalchemy import update

    spaces = _spaces()
    now = time.time()
    values = {"person": space.person, "project": space.project, "project_root": space.project_root,
              "revision": 0, "updated_at": now}
    backend = conn.dialect.name
    if backend == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        conn.execute(postgresql_insert(spaces).values(**values).on_conflict_do_nothing())
    elif backend == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        conn.execute(sqlite_insert(spaces).values(**values).on_conflict_do_nothing())
    else:  # another database: its writers may race to make the row; the loser's call fails and says so
        from sqlalchemy import insert as plain_insert, select

        if conn.execute(select(spaces.c.revision).where(_in(spaces, space))).first() is None:
            conn.execute(plain_insert(spaces).values(**values))
    conn.execute(update(spaces).where(_in(spaces, space))
                 .values(revision=spaces.c.revision + 1, updated_at=now))


def entries(conn: Any, space: Space) -> dict[str, Entry]:
    """Every file of ``space`` by key (at most ``max_files`` rows: the limit holds)."""
    from sqlalchemy import select

    rows = _files()
    found = conn.execute(select(rows.c.path, rows.c.size, rows.c.updated_at, rows.c.updated_by)
                         .where(_in(rows, space)))
    return {path: Entry(path, size, updated_at, by) for path, size, updated_at, by in found}


def read_file(conn: Any, space: Space, key: str) -> str | None:
    """The content of file ``key``, or None when there is none."""
    from sqlalchemy import select

    rows = _files()
    return conn.execute(select(rows.c.content).where(_in(rows, space), rows.c.path == key)).scalar()


def write_file(conn: Any, space: Space, key: str, content: str, *, known: dict[str, Entry], limits: Limits,
               by: str | None) -> None:
    """Make or replace file ``key`` (under ``lock``), within the limits.
    ``known`` is ``entries`` as read under the lock."""
    from sqlalchemy import insert, update

    size = len(content.encode("utf-8"))
    if size > limits.max_file_bytes:
        raise TooBig(f"That is {size:,} bytes; a memory file holds at most {limits.max_file_bytes:,} "
                     "([plugins.memory] max_file_bytes). Keep it shorter, or split it into several files.")
    before = known.get(key)
    total = sum(e.size for e in known.values()) - (before.size if before else 0) + size
    if total > limits.max_total_bytes:
        raise TooBig(f"The memories would then hold {total:,} bytes, over their limit of "
                     f"{limits.max_total_bytes:,} ([plugins.memory] max_total_bytes). Delete or shorten memories "
                     "that are no longer useful first.")
    if before is None and len(known) + 1 > limits.max_files:
        raise TooBig(f"There are already {len(known):,} memory files, the most there may be "
                     "([plugins.memory] max_files). Delete or merge memories that are no longer useful first.")
    rows = _files()
    now = time.time()
    if before is None:
        conn.execute(insert(rows).values(person=space.person, project=space.project, path=key, content=content,
                                         size=size, created_at=now, updated_at=now, updated_by=by))
    else:
        conn.execute(update(rows).where(_in(rows, space), rows.c.path == key)
                     .values(content=content, size=size, updated_at=now, updated_by=by))


def delete_keys(conn: Any, space: Space, keys: Iterable[str]) -> int:
    """Delete files ``keys`` (under ``lock``); how many there were."""
    from sqlalchemy import delete

    rows = _files()
    count = 0
    for key in keys:
        count += conn.execute(delete(rows).where(_in(rows, space), rows.c.path == key)).rowcount or 0
    return count


def move_keys(conn: Any, space: Space, moves: Iterable[tuple[str, str]], by: str | None) -> None:
    """Give files new keys (under ``lock``; the new keys are free)."""
    from sqlalchemy import update

    rows = _files()
    now = time.time()
    for old, new in moves:
        conn.execute(update(rows).where(_in(rows, space), rows.c.path == old)
                     .values(path=new, updated_at=now, updated_by=by))


def spaces_of(conn: Any, person: str) -> list[Space]:
    """Every set of ``person``'s that the store has, the person's own first."""
    from sqlalchemy import select

    spaces = _spaces()
    found = conn.execute(select(spaces.c.project, spaces.c.project_root).where(spaces.c.person == person)
                         .order_by(spaces.c.project))
    return [Space(person, project, root) for project, root in found]

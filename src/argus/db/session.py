"""Engine, sessions and migrations.

SQLite runs in WAL mode with foreign keys and a busy timeout so the API and the
scheduler loops can share one file; PostgreSQL works with the same code.
Migrations (Alembic) are applied at start, never by hand.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


DEFAULT_BUSY_TIMEOUT_S = 30.0

_SQLITE_WRITE_LOCKS: dict[str, threading.Lock] = {}
_SQLITE_WRITE_LOCKS_GUARD = threading.Lock()


def _sqlite_write_lock(url: str) -> threading.Lock:
    """One lock per SQLite file, shared by every engine on it in this process (``sibling`` too)."""
    with _SQLITE_WRITE_LOCKS_GUARD:
        return _SQLITE_WRITE_LOCKS.setdefault(url, threading.Lock())


def make_engine(url: str, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S, **kwargs: Any) -> Engine:
    """``busy_timeout_s``: how long a statement waits for another writer's lock before failing
    (SQLite ``busy_timeout``; PostgreSQL ``lock_timeout``, unless the URL sets ``options``)."""
    ms = max(1, int(busy_timeout_s * 1000))
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": busy_timeout_s}, **kwargs)
        event.listen(engine, "connect", lambda conn, _record: _sqlite_pragmas(conn, ms))
        event.listen(engine, "savepoint", _begin_before_savepoint)
        return engine
    connect_args = {} if "options=" in url else {"options": f"-c lock_timeout={ms}"}
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args, **kwargs)


def _sqlite_pragmas(dbapi_conn: Any, busy_ms: int) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
    cur.close()


def _begin_before_savepoint(conn: Connection, _name: str) -> None:
    """Open the transaction a SAVEPOINT (``Session.begin_nested``) is to nest in, if pysqlite has not yet.

    pysqlite starts a transaction (``BEGIN``) only before an INSERT, UPDATE or DELETE, so a SAVEPOINT that comes
    before the transaction's first write opens a transaction of its own, and its RELEASE commits it: what it
    wrote was committed on the spot, apart from the writes that followed it, and the outer rollback did not
    undo it — a pipeline step's task stayed queued while the step's state, written after it, was rolled back,
    and the next look queued it again. A ``BEGIN`` first makes the savepoint nest in the session's
    transaction, as on PostgreSQL. Only the savepoints change: a transaction still starts at its first write
    (not, as SQLAlchemy's pysqlite recipe would have it, at its first read, whose stale snapshot makes a later
    write fail at once as "database is locked" instead of waiting its turn). For the same reason the BEGIN is
    IMMEDIATE: a savepoint is taken to write, and a deferred BEGIN whose first statement in it is a read would
    hold a snapshot that a concurrent commit makes unwritable (SQLITE_BUSY at once, not after the busy
    timeout); IMMEDIATE waits its turn for the write lock up front, like any other writer."""
    dbapi = conn.connection.dbapi_connection
    if dbapi is not None and not dbapi.in_transaction:
        dbapi.execute("BEGIN IMMEDIATE")


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class Database:
    """Owns the engine and hands out short transactions."""

    def __init__(self, url: str, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.url = url
        self.busy_timeout_s = busy_timeout_s
        self.engine = make_engine(url, busy_timeout_s=busy_timeout_s)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = _sqlite_write_lock(url) if url.startswith("sqlite") else None

    def sibling(self, *, busy_timeout_s: float) -> Database:
        """The same database through its own engine with another busy timeout.

        API requests wait briefly for a lock and answer 503 "database busy" (a client retries);
        the scheduler's loops wait longer: they retry anyway, and nobody is waiting on a socket."""
        if self.url.endswith(":memory:"):
            return self  # a second engine would open a second, empty in-memory database
        return Database(self.url, busy_timeout_s=busy_timeout_s)

    def migrate(self) -> None:
        migrate(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any error."""
        s = self._factory()
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    @contextmanager
    def writer(self) -> Iterator[Session]:
        """A transaction for a hot write path (task submit), taken one at a time per SQLite file.

        SQLite has one writer at a time, and a connection that finds the file locked polls for it
        with sleeps of 1, 2, 5 … 25, 50, 100 ms (``busy_timeout``): under four concurrent submits
        that polling, not the work, made p99 ~120 ms and wasted the moments the lock was free.
        Waiting on a Python lock instead wakes the next writer the instant the last one committed,
        and, because the transaction starts after the lock, its first read already sees the last
        commit (no stale snapshot to upgrade). Keep the work inside short: validation belongs
        before it. PostgreSQL locks rows itself: there this is ``session()``.

        Waiting for the lock is bounded by the busy timeout, as SQLite's own wait is: past it, the
        ``sqlalchemy.exc.TimeoutError`` that the API answers as 503 "database busy"."""
        lock = self._write_lock
        if lock is None:
            with self.session() as s:
                yield s
            return
        if not lock.acquire(timeout=self.busy_timeout_s):
            raise SQLAlchemyTimeout(f"waited {self.busy_timeout_s:g} s for this process's turn to write to the database")
        try:
            with self.session() as s:
                yield s
        finally:
            lock.release()

    def dispose(self) -> None:
        self.engine.dispose()

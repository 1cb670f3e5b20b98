"""Engine, sessions and migrations.

SQLite runs in WAL mode with foreign keys and a busy timeout so the API and the
scheduler loops can share one file; PostgreSQL works with the same code.
Migrations (Alembic) are applied at start, never by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


DEFAULT_BUSY_TIMEOUT_S = 30.0


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

    def dispose(self) -> None:
        self.engine.dispose()

"""A database that is busy, full or broken is a 503 that says so, not a 500 "internal error".

The request was fine; the database cannot take it *now*: a write lock held by someone else
past the request's busy timeout (SQLite ``database is locked``, PostgreSQL ``lock_timeout``),
a full disk (SQLite ``database or disk is full``, PostgreSQL SQLSTATE 53100), an I/O error,
a read-only file. The answer is ``503`` with ``Retry-After`` and a message naming the cause,
so a client (``argus submit`` retries 503 with the same Idempotency-Key) or a person knows
to wait. Anything else stays a 500.

The server log gets one line when a cause first appears and then at most one a minute
with the number of requests answered 503 since — not one traceback per request while the
disk is full.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

log = logging.getLogger("argus.api.db")

LOG_EVERY_S = 60.0


@dataclass(frozen=True)
class Unavailable:
    code: str  # machine-readable, in the body's detail.code
    cause: str  # what the message starts with
    hint: str  # what the operator does about it
    retry_after_s: int


BUSY = Unavailable("database_busy", "database busy", "another writer holds the database lock; retry shortly", 2)
FULL = Unavailable("database_full", "database disk full",
                   "the disk holding the database is full; an operator must free space", 30)
IO = Unavailable("database_io_error", "database I/O error", "the disk holding the database failed a read or "
                 "write; an operator should check it", 30)
READ_ONLY = Unavailable("database_read_only", "database read-only",
                        "the database file or its disk is read-only; an operator should check it", 30)
UNREACHABLE = Unavailable("database_unreachable", "database unreachable", "the database server does not "
                          "answer; retry shortly", 5)

_SQLITE = {  # sqlite3 error names (Python ≥ 3.11): the primary code is the prefix
    "SQLITE_BUSY": BUSY, "SQLITE_LOCKED": BUSY, "SQLITE_FULL": FULL, "SQLITE_IOERR": IO,
    "SQLITE_READONLY": READ_ONLY, "SQLITE_CANTOPEN": UNREACHABLE,
}
_SQLITE_TEXT = (("database is locked", BUSY), ("database table is locked", BUSY),
                ("database or disk is full", FULL), ("disk i/o error", IO),
                ("readonly database", READ_ONLY), ("unable to open database", UNREACHABLE))
_POSTGRES = {  # SQLSTATE
    "55P03": BUSY,  # lock_not_available (lock_timeout)
    "57014": BUSY,  # query_canceled (statement_timeout)
    "40P01": BUSY,  # deadlock_detected
    "40001": BUSY,  # serialization_failure
    "53300": BUSY,  # too_many_connections
    "53100": FULL,  # disk_full
    "53200": BUSY,  # out_of_memory
    "58030": IO,  # io_error
    "25006": READ_ONLY,  # read_only_sql_transaction (a standby, or default_transaction_read_only)
    "57P03": UNREACHABLE,  # cannot_connect_now (starting up, shutting down)
}


def classify(exc: BaseException) -> Unavailable | None:
    """Which "not now" this database error is, or None (a bug or a bad statement: a 500)."""
    if isinstance(exc, PoolTimeout):
        return BUSY  # every pooled connection is in use past the pool timeout
    if not isinstance(exc, DBAPIError):
        return None
    orig = exc.orig
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str):
        for prefix, kind in _SQLITE.items():
            if name == prefix or name.startswith(prefix + "_"):
                return kind
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(state, str):
        if state in _POSTGRES:
            return _POSTGRES[state]
        if state.startswith("08"):  # connection exceptions
            return UNREACHABLE
    text = str(orig).lower()
    for needle, kind in _SQLITE_TEXT:
        if needle in text:
            return kind
    if state is None and exc.connection_invalidated:
        return UNREACHABLE  # the connection broke under us (PostgreSQL restarted)
    if state is None and type(orig).__name__ == "OperationalError" and "connect" in text:
        return UNREACHABLE  # psycopg cannot connect: no SQLSTATE, a message about the connection
    return None


class RateLimitedLog:
    """One line per cause when it appears, then at most one per ``every_s`` with the count since."""

    def __init__(self, every_s: float = LOG_EVERY_S) -> None:
        self.every_s = every_s
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def report(self, kind: Unavailable, exc: BaseException, where: str) -> bool:
        """Log if due; returns whether a line was written."""
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind.code)
            if last is not None and now - last < self.every_s:
                self._since[kind.code] = self._since.get(kind.code, 0) + 1
                return False
            more = self._since.pop(kind.code, 0)
            self._last[kind.code] = now
        tail = f" ({more} more request(s) answered 503 for this in the last {self.every_s:.0f} s)" if more else ""
        log.warning("%s: answering 503 (first: %s): %s%s", kind.cause, where, _one_line(exc), tail)
        return True


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return f"{type(orig).__name__}: {str(orig).splitlines()[0] if str(orig) else ''}"[:300]


def install(app: FastAPI, reporter: RateLimitedLog | None = None) -> None:
    """Answer 503 + Retry-After for database errors that mean "not now" (the rest reach the 500 handler)."""
    reporter = reporter or RateLimitedLog()
    app.state.db_unavailable_log = reporter

    async def handler(request: Request, exc: Exception) -> JSONResponse:
        kind = classify(exc)
        if kind is None:
            log.exception("unhandled database error on %s %s", request.method, request.url.path)
            return JSONResponse({"detail": {"code": "server_error", "message": "internal error; see the server log"}},
                                status_code=500)
        reporter.report(kind, exc, f"{request.method} {request.url.path}")
        body = {"detail": {"code": kind.code, "message": f"{kind.cause}: {kind.hint}",
                           "retry_after_s": kind.retry_after_s}}
        return JSONResponse(body, status_code=503, headers={"Retry-After": str(kind.retry_after_s)})

    app.add_exception_handler(DBAPIError, handler)
    app.add_exception_handler(PoolTimeout, handler)

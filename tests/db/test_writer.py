"""Database.writer: one write transaction at a time per SQLite file, in order of arrival, bounded."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeout

from argus.db.models import IdCounterModel
from argus.db.session import Database


def _db(tmp_path, **kw) -> Database:
    db = Database(f"sqlite:///{tmp_path / 'w.db'}", **kw)
    db.migrate()
    return db


def test_writers_never_overlap_even_through_a_sibling_engine(tmp_path):
    db = _db(tmp_path)
    other = db.sibling(busy_timeout_s=30)  # the scheduler's engine on the same file
    spans: list[tuple[float, float]] = []

    def write(database: Database, i: int) -> None:
        with database.writer() as s:
            start = time.monotonic()
            s.execute(insert(IdCounterModel).values(day=f"d{i:07d}", next_value=1))
            time.sleep(0.02)  # long enough that an unlocked twin would overlap
            s.flush()
            spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=write, args=(db if i % 2 else other, i)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spans.sort()
    assert len(spans) == 8
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end, "two write transactions ran at once"
    with db.session() as s:
        assert len(s.scalars(select(IdCounterModel.day)).all()) == 8


def test_a_writer_sees_the_previous_writers_commit(tmp_path):
    """The transaction starts after the lock: a read-then-write never works from a stale snapshot."""
    db = _db(tmp_path)
    with db.session() as s:
        s.add(IdCounterModel(day="20261123", next_value=0))

    def bump() -> None:
        with db.writer() as s:
            row = s.get(IdCounterModel, "20261123")
            assert row is not None
            row.next_value += 1

    threads = [threading.Thread(target=bump) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with db.session() as s:
        assert s.get(IdCounterModel, "20261123").next_value == 20  # no lost update


def test_waiting_for_the_write_turn_is_bounded_by_the_busy_timeout(tmp_path):
    db = _db(tmp_path, busy_timeout_s=0.2)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.writer():
            holding.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(5)
    try:
        started = time.monotonic()
        with pytest.raises(SQLAlchemyTimeout, match="turn to write"), db.writer():
            pass
        assert time.monotonic() - started < 2
    finally:
        release.set()
        t.join()
    with db.writer() as s:  # released: the next writer goes at once
        s.execute(select(1))

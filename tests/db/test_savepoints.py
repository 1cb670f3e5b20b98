"""A SAVEPOINT (``Session.begin_nested``) on SQLite nests in the session's transaction even when it is that
transaction's first write: the outer rollback undoes it. pysqlite opened no transaction before it (it BEGINs
only before INSERT, UPDATE and DELETE), so the SAVEPOINT opened its own and its RELEASE committed it."""

from __future__ import annotations

import pytest
from sqlalchemy import func, insert, select

from argus.db.models import IdCounterModel
from argus.db.session import Database


def _count(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(IdCounterModel)) or 0


def test_a_savepoint_that_is_the_first_write_is_rolled_back_with_its_transaction(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path / 's.db'}")
    db.migrate()
    with pytest.raises(RuntimeError), db.session() as s:
        assert s.scalar(select(func.count()).select_from(IdCounterModel)) == 0  # reads first, as the loops do
        with s.begin_nested():
            s.execute(insert(IdCounterModel).values(day="d1", next_value=1))
        s.execute(insert(IdCounterModel).values(day="d2", next_value=1))
        raise RuntimeError("a later failure in the same transaction")
    assert _count(db) == 0
    with db.session() as s:  # and committed, both are
        with s.begin_nested():
            s.execute(insert(IdCounterModel).values(day="d1", next_value=1))
        s.execute(insert(IdCounterModel).values(day="d2", next_value=1))
    assert _count(db) == 2

"""The Alembic migrations and the ORM models describe the same schema."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from argus.db.models import Base
from argus.db.session import Database


def test_migrations_match_models(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    db.migrate()
    db.migrate()  # idempotent
    with db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == [], diff


def test_sqlite_runs_in_wal_with_foreign_keys(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'm.db'}")
    db.migrate()
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
    assert {"users", "api_tokens", "tasks", "task_events", "task_attempts", "ssh_keys"} <= set(
        inspect(db.engine).get_table_names()
    )

"""The Alembic migrations and the ORM models describe the same schema."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

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


def upgrade_keeps_data(engine) -> None:  # noqa: ANN001
    """A database at 0006 (before teams) with users, a token and an audit event upgrades to head with every
    row kept, and the teams tables arrive empty (issue 26: migration from single-user data with no loss)."""
    from alembic import command
    from alembic.config import Config

    from argus.db.session import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0006")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, is_admin, disabled, created_at, max_gpus) "
                          "VALUES (1, 'alice', false, false, '2026-01-01 00:00:00+00:00', 4), "
                          "(2, 'bob', true, false, '2026-01-01 00:00:00+00:00', NULL)"))
        conn.execute(text("INSERT INTO api_tokens (user_id, token_hash, prefix, created_at) "
                          "VALUES (1, 'h', 'argus_ab', '2026-01-01 00:00:00+00:00')"))
        conn.execute(text("INSERT INTO tasks (id, user_id, kind, workload, status, priority, nnodes, n_gpus_per_node, "
                          "spec_raw, spec_resolved, command_raw, command_expanded, argv, warnings, attempts, "
                          "created_at, updated_at) VALUES ('ppo-000001', 1, 'advanced', 'ppo', 'SUCCEEDED', 0, 1, 8, "
                          "'kind: advanced', '{}', 'python3 -m x', 'python3 -m x', '[]', '[]', 1, "
                          "'2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')"))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name, max_gpus FROM users ORDER BY id")).all() == [("alice", 4), ("bob", None)]
        # 0008: every user there before directory sign-in stays a local user
        assert [bool(d) for d, in conn.execute(text("SELECT directory FROM users ORDER BY id"))] == [False, False]
        assert conn.execute(text("SELECT user_id, prefix FROM api_tokens")).all() == [(1, "argus_ab")]
        assert conn.execute(text("SELECT id, user_id, status, n_gpus_per_node, team FROM tasks")).all() == [
            ("ppo-000001", 1, "SUCCEEDED", 8, None)]
        assert conn.execute(text("SELECT count(*) FROM teams")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM team_members")).scalar() == 0


def test_upgrade_to_teams_keeps_every_row_on_sqlite(tmp_path):
    upgrade_keeps_data(Database(f"sqlite:///{tmp_path / 'm.db'}").engine)


def pending_reason_code_up_and_down(engine) -> None:  # noqa: ANN001
    """0009 (issue 37) adds the pending reason's code and parameters beside its text, and takes them away again:
    the text and every other column stay either way."""
    from alembic import command
    from alembic.config import Config

    from argus.db.session import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def to(revision: str, down: bool = False) -> None:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(cfg, revision)

    def columns() -> set[str]:
        return {c["name"] for c in inspect(engine).get_columns("tasks")}

    to("0008")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, is_admin, disabled, created_at) "
                          "VALUES (1, 'alice', false, false, '2026-01-01 00:00:00+00:00')"))
        conn.execute(text("INSERT INTO tasks (id, user_id, kind, workload, status, priority, nnodes, n_gpus_per_node, "
                          "spec_raw, spec_resolved, command_raw, command_expanded, argv, warnings, attempts, "
                          "pending_reason, created_at, updated_at) VALUES ('ppo-000001', 1, 'advanced', 'ppo', "
                          "'QUEUED', 0, 1, 8, 'kind: advanced', '{}', 'x', 'x', '[]', '[]', 0, "
                          "'user limit: 1 running task', '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')"))
    assert "pending_reason_code" not in columns()
    to("head")
    assert {"pending_reason_code", "pending_reason_params"} <= columns()
    with engine.begin() as conn:
        assert conn.execute(text("SELECT pending_reason, pending_reason_code FROM tasks")).one() == (
            "user limit: 1 running task", None)
        conn.execute(text("UPDATE tasks SET pending_reason_code = 'queue.user_task_limit', "
                          "pending_reason_params = '{\"max\": 1}'"))
    to("0008", down=True)
    assert not {"pending_reason_code", "pending_reason_params"} & columns()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, status, pending_reason FROM tasks")).one() == (
            "ppo-000001", "QUEUED", "user limit: 1 running task")
    to("head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT pending_reason_code, pending_reason_params FROM tasks")).one() == (None, None)


def test_pending_reason_code_migrates_up_and_down_on_sqlite(tmp_path):
    pending_reason_code_up_and_down(Database(f"sqlite:///{tmp_path / 'm.db'}").engine)


def team_model_registries_up_and_down(engine) -> None:  # noqa: ANN001
    """0015 (issue 38, team model registries) keeps every personal version and alias (team_id NULL), lets a user's
    ``m:1`` and their team's ``nlp/m:1`` coexist while each registry stays unique, and a downgrade drops only the
    teams' rows."""
    from alembic import command
    from alembic.config import Config

    from argus.db.session import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def to(revision: str, down: bool = False) -> None:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(cfg, revision)

    at = "'2026-01-01 00:00:00+00:00'"
    version = ("INSERT INTO model_versions (user_id, {team}name, version, kind, path, lineage, created_at) "
               "VALUES (1, {tid}'m', {n}, 'hf', '$HOME/models/m', '{{}}', " + at + ")")
    to("0014")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, is_admin, disabled, created_at) VALUES (1, 'alice', false, "
                          "false, " + at + ")"))
        conn.execute(text("INSERT INTO teams (id, name, weight, created_at) VALUES (1, 'nlp', 1, " + at + ")"))
        conn.execute(text(version.format(team="", tid="", n=1)))
        conn.execute(text("INSERT INTO model_aliases (user_id, name, alias, version, updated_at) "
                          "VALUES (1, 'm', 'production', 1, " + at + ")"))
    to("head")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT user_id, team_id, name, version FROM model_versions")).all() == [
            (1, None, "m", 1)]
        assert conn.execute(text("SELECT team_id, alias, version FROM model_aliases")).all() == [
            (None, "production", 1)]
        conn.execute(text(version.format(team="team_id, ", tid="1, ", n=1)))  # nlp/m:1 beside alice's m:1
        conn.execute(text("INSERT INTO model_aliases (user_id, team_id, name, alias, version, updated_at) "
                          "VALUES (1, 1, 'm', 'production', 1, " + at + ")"))
    for duplicate in (version.format(team="", tid="", n=1), version.format(team="team_id, ", tid="1, ", n=1)):
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text(duplicate))
    with engine.begin() as conn:  # the team's rows go with the team
        conn.execute(text("INSERT INTO teams (id, name, weight, created_at) VALUES (2, 'cv', 1, " + at + ")"))
        conn.execute(text(version.format(team="team_id, ", tid="2, ", n=1)))
        conn.execute(text("DELETE FROM teams WHERE id = 2"))
        assert conn.execute(text("SELECT count(*) FROM model_versions WHERE team_id = 2")).scalar() == 0
    to("0014", down=True)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT user_id, name, version FROM model_versions")).all() == [(1, "m", 1)]
        assert conn.execute(text("SELECT user_id, alias FROM model_aliases")).all() == [(1, "production")]
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text(version.format(team="", tid="", n=1)))
    to("head")


def test_team_model_registries_migrate_up_and_down_on_sqlite(tmp_path):
    team_model_registries_up_and_down(Database(f"sqlite:///{tmp_path / 'm.db'}").engine)


def status_message_code_up_and_down(engine) -> None:  # noqa: ANN001
    """0016 (issue 37) adds the status message's and each timeline entry's code and parameters beside their text,
    and takes them away again: the texts (English, as always) stay either way, and an old row has no code."""
    from alembic import command
    from alembic.config import Config

    from argus.db.session import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))

    def to(revision: str, down: bool = False) -> None:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            (command.downgrade if down else command.upgrade)(cfg, revision)

    def columns(table: str) -> set[str]:
        return {c["name"] for c in inspect(engine).get_columns(table)}

    at = "'2026-01-01 00:00:00+00:00'"
    to("0015")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, is_admin, disabled, created_at) "
                          "VALUES (1, 'alice', false, false, " + at + ")"))
        conn.execute(text("INSERT INTO tasks (id, user_id, kind, workload, status, priority, nnodes, n_gpus_per_node, "
                          "spec_raw, spec_resolved, command_raw, command_expanded, argv, warnings, attempts, "
                          "status_message, created_at, updated_at) VALUES ('ppo-000001', 1, 'advanced', 'ppo', "
                          "'CANCELED', 0, 1, 8, 'kind: advanced', '{}', 'x', 'x', '[]', '[]', 0, "
                          "'canceled by alice', " + at + ", " + at + ")"))
        conn.execute(text("INSERT INTO task_events (task_id, at, from_status, to_status, message, actor) "
                          "VALUES ('ppo-000001', " + at + ", 'QUEUED', 'CANCELED', 'canceled by alice', 'alice')"))
    assert "status_message_code" not in columns("tasks") and "message_code" not in columns("task_events")
    to("head")
    assert {"status_message_code", "status_message_params"} <= columns("tasks")
    assert {"message_code", "message_params"} <= columns("task_events")
    with engine.begin() as conn:
        assert conn.execute(text("SELECT status_message, status_message_code FROM tasks")).one() == (
            "canceled by alice", None)
        assert conn.execute(text("SELECT message, message_code FROM task_events")).one() == ("canceled by alice", None)
        conn.execute(text("UPDATE tasks SET status_message_code = 'status.canceled_by', "
                          "status_message_params = '{\"user\": \"alice\"}'"))
        conn.execute(text("UPDATE task_events SET message_code = 'status.canceled_by', "
                          "message_params = '{\"user\": \"alice\"}'"))
    to("0015", down=True)
    assert not {"status_message_code", "status_message_params"} & columns("tasks")
    assert not {"message_code", "message_params"} & columns("task_events")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, status, status_message FROM tasks")).one() == (
            "ppo-000001", "CANCELED", "canceled by alice")
        assert conn.execute(text("SELECT to_status, message FROM task_events")).one() == (
            "CANCELED", "canceled by alice")
    to("head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT status_message_code, status_message_params FROM tasks")).one() == (None, None)


def test_status_message_code_migrates_up_and_down_on_sqlite(tmp_path):
    status_message_code_up_and_down(Database(f"sqlite:///{tmp_path / 'm.db'}").engine)

"""The same schema and API behaviour on PostgreSQL (the cluster-mode database)."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from argus.db.models import Base
from argus.db.session import Database
from argus.settings import Settings
from tests.helpers import live_server
from tests.pg import create_database, postgres_server

_n = itertools.count()


@pytest.fixture(scope="module")
def pg_admin_url():
    with postgres_server() as url:
        yield url


@pytest.fixture
def pg_url(pg_admin_url):
    return create_database(pg_admin_url, f"argus_test_{next(_n)}")


def test_migrations_match_models_on_postgres(pg_url):
    db = Database(pg_url)
    db.migrate()
    db.migrate()
    with db.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    db.dispose()


SPEC = """\
kind: advanced
workload: sft
nnodes: 1
n_gpus_per_node: 1
command: python3 -m verl.trainer.sft_trainer data.train_files=$HOME/datasets/t.parquet
"""


def test_api_on_postgres_with_concurrent_ids(pg_url, tmp_path):
    settings = Settings(state_dir=tmp_path, database_url=pg_url, sftp_enabled=False, verl_validation="off")
    with live_server(settings) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")

        def submit(i):
            c = alice if i % 2 else bob
            r = c.post("/api/v2/tasks", content=SPEC.encode(), headers={"Content-Type": "application/yaml"})
            assert r.status_code == 201, r.text
            return r.json()["task_id"]

        with ThreadPoolExecutor(6) as pool:
            ids = list(pool.map(submit, range(30)))
        assert len(set(ids)) == 30 and all(i.startswith("sft-") for i in ids)
        assert alice.get("/api/v2/tasks").json()["total"] == 15
        assert bob.get(f"/api/v2/tasks/{ids[1]}").status_code == 404  # ids[1] is alice's
        r = alice.post(f"/api/v2/tasks/{ids[1]}/cancel")
        assert r.status_code == 200 and r.json()["status"] == "CANCELED"
        ev = alice.get(f"/api/v2/tasks/{ids[1]}/events").json()
        assert [e["to_status"] for e in ev] == ["QUEUED", "CANCELED"]


def test_upgrade_to_teams_keeps_every_row_on_postgres(pg_url):
    from tests.db.test_migrations import upgrade_keeps_data

    db = Database(pg_url)
    upgrade_keeps_data(db.engine)
    db.dispose()


def test_pending_reason_code_migrates_up_and_down_on_postgres(pg_url):
    from tests.db.test_migrations import pending_reason_code_up_and_down

    db = Database(pg_url)
    pending_reason_code_up_and_down(db.engine)
    db.dispose()


def test_team_model_registries_migrate_up_and_down_on_postgres(pg_url):
    from tests.db.test_migrations import team_model_registries_up_and_down

    db = Database(pg_url)
    team_model_registries_up_and_down(db.engine)
    db.dispose()


def test_status_message_code_migrates_up_and_down_on_postgres(pg_url):
    from tests.db.test_migrations import status_message_code_up_and_down

    db = Database(pg_url)
    status_message_code_up_and_down(db.engine)
    db.dispose()

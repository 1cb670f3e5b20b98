"""Issue 14's operations features on PostgreSQL: the same tests as on SQLite, with ``live`` on a PG database.

Imported test functions are collected here again and take this module's ``live`` fixture.
"""

from __future__ import annotations

import pytest

from argus.settings import Settings
from tests.api.test_audit_api import (  # noqa: F401 - collected again here, on PostgreSQL
    test_a_refused_action_leaves_no_event,
    test_admin_actions_are_recorded,
    test_cancel_by_someone_else_is_recorded_and_by_owner_is_not,
    test_pages_newest_first_with_filters,
    test_web_sign_in_lockout_is_recorded_once,
)
from tests.api.test_prometheus import (  # noqa: F401
    test_task_counts_are_recounted_after_a_prune,
    test_task_counts_match_the_database,
)
from tests.api.test_retention_api import (  # noqa: F401
    test_owner_deletes_an_ended_tasks_checkpoints,
    test_prune_removes_exactly_what_its_dry_run_listed,
)
from tests.db.test_postgres import pg_admin_url, pg_url  # noqa: F401 - fixtures
from tests.helpers import live_server


@pytest.fixture
def live(pg_url, tmp_path):  # noqa: F811
    settings = Settings(state_dir=tmp_path / "state", database_url=pg_url, sftp_enabled=False,
                        verl_validation="off")
    with live_server(settings) as srv:
        yield srv

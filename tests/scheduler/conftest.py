"""The loops' shared fixtures: a fake Ray with one 4-GPU worker, a settable clock, a context on real SQLite."""

from __future__ import annotations

import pytest

from tests.pg import postgres_server
from tests.scheduler.fakes import Clock, FakeRay, make_ctx


@pytest.fixture
def ray() -> FakeRay:
    r = FakeRay()
    r.add_node("w1", 4)
    return r


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ctx(settings, ray, clock):
    c = make_ctx(settings.model_copy(update={"max_retries": 1, "start_timeout_s": 60}), ray, clock)
    yield c
    c.db.dispose()


@pytest.fixture(scope="module")
def pg_admin_url():
    """A throwaway PostgreSQL server for a module's postgres-parametrised tests (skipped without one)."""
    try:
        with postgres_server() as url:
            yield url
    except RuntimeError as exc:  # no PostgreSQL binaries on this machine
        pytest.skip(str(exc))

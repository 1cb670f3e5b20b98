"""The loops' shared fixtures: a fake Ray with one 4-GPU worker, a settable clock, a context on real SQLite."""

from __future__ import annotations

import pytest

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

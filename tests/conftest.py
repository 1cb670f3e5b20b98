"""Shared fixtures: a Settings rooted in a temp dir, a migrated real SQLite database."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argus.settings import Settings
from tests.envs_fixtures import verl041_python, verl091_cpu_python  # noqa: F401 - built training environments
from tests.notify_fixtures import mailbox, receiver  # noqa: F401 - a local SMTP server and HTTP receiver (issue 24)


def pytest_configure(config: pytest.Config) -> None:
    """A light-lane xdist worker yields the CPU to the heavy lane (tests/scheduling.py): its processes run at
    nice ``LIGHT_NICE``, so a Ray cluster beside it still answers its 1 s health checks on a busy machine,
    and its waits are ``LIGHT_SLACK`` times longer (tests/waiting.py): they bound hangs, not speed. So is
    the time a server in it gives verl to answer (``ARGUS_VERL_TIMEOUT_S``, where a test does not set it)."""
    from tests import waiting
    from tests.scheduling import HEAVY_LANE, LIGHT_NICE, LIGHT_SLACK

    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker and worker != HEAVY_LANE:
        os.nice(LIGHT_NICE)
        waiting.SLACK = LIGHT_SLACK
        os.environ.setdefault("ARGUS_VERL_TIMEOUT_S", str(waiting.slack(Settings.model_fields["verl_timeout_s"].default)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the suite's work units queued longest first (tests/scheduling.py); in one
    process the order stays as written. Either way, a module that drives Ray or a browser (marked ``e2e``
    or ``browser``) must be one of ``scheduling.HEAVY``: run beside another heavy unit it would starve it."""
    from tests.scheduling import heavy, unit_of

    unlisted = sorted({item.nodeid.split("::", 1)[0] for item in items
                       if (item.get_closest_marker("e2e") or item.get_closest_marker("browser"))
                       and not heavy(unit_of(item.nodeid))})
    if unlisted:
        raise pytest.UsageError("marked e2e or browser but not in tests/scheduling.py's HEAVY: " + ", ".join(unlisted))
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike, the queue follows it
        from tests.scheduling import arrange

        arrange(items)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Each module one unit, the modules that share one costly resource one unit (tests/scheduling.py)."""
    from tests.scheduling import make_scheduler

    return make_scheduler(config, log)


@pytest.fixture(autouse=True)
def _no_server_folders_shown():
    """Fail the test whose requests got an answer naming the server's folders (tests.helpers.LEAKS)."""
    from tests.helpers import LEAKS

    before = len(LEAKS)
    yield
    leaked = LEAKS[before:]
    assert not leaked, "an answer showed the server's folders:\n" + "\n".join(
        f"{req}: {folder} in {body}" for req, folder, body in leaked)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off")


@pytest.fixture
def live(settings):
    """A real uvicorn server on a free port over a real SQLite file (no scheduler, no Ray)."""
    from tests.helpers import live_server

    with live_server(settings) as srv:
        yield srv

"""Shared fixtures: a Settings rooted in a temp dir, a migrated real SQLite database."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus.settings import Settings
from tests.envs_fixtures import verl041_python, verl091_cpu_python  # noqa: F401 - built training environments
from tests.notify_fixtures import mailbox, receiver  # noqa: F401 - a local SMTP server and HTTP receiver (issue 24)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups off the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Work units for pytest-xdist (scripts/test.sh runs ``-n N --dist loadgroup``), longest first.

    See tests/scheduling.py: each module is one unit (its module fixtures start once), the modules
    that share a costly session resource (the e2e stack, the WebUI's ``argus up``) are one group, and
    the units are queued longest first so that the last one to start is a short one.
    """
    from tests.scheduling import arrange

    arrange(items)


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

import pytest

from tests.helpers import live_server


@pytest.fixture
def live(settings):
    with live_server(settings) as srv:
        yield srv

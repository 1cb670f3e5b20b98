"""Sign-in with the directory (issue 26) on the WebUI's login page, in a real Chromium, against a real
OpenLDAP (tests/ldap_fixtures.py) and a real Argus API + WebUI (tests.helpers.live_server: no Ray is
needed to sign in)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from argus.settings import Settings
from tests.helpers import LiveServer, free_port, live_server
from tests.ldap_fixtures import USERS, Slapd, slapd  # noqa: F401 - fixture
from tests.web.conftest import shot

pytestmark = [pytest.mark.browser]


def pw(name: str) -> str:
    return USERS[name][0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, slapd: Slapd) -> Iterator[LiveServer]:  # noqa: F811
    state = tmp_path_factory.mktemp("web-ldap") / "state"
    with live_server(Settings(state_dir=state, sftp_enabled=False, verl_validation="off", **slapd.settings())) as srv:
        yield srv


@pytest.fixture
def page(chromium):  # noqa: ANN001, ANN201 - the package's one Chromium (tests/web/conftest.py)
    ctx = chromium.new_context(locale="en-US", extra_http_headers={"Accept-Language": "en-US,en;q=0.9"})
    requests: list[str] = []
    ctx.on("request", lambda r: requests.append(r.url))
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    try:
        yield p
    finally:
        ctx.close()
    foreign = [u for u in requests if not (u.startswith("http://127.0.0.1:") or u.startswith("data:"))]
    assert not foreign, f"the page loaded something from outside the server: {foreign[:5]}"


def fill_and_submit(page, url: str, user: str, password: str) -> None:  # noqa: ANN001
    page.goto(f"{url}/login")
    page.fill("#login-user", user)
    page.fill("#login-password", password)
    page.click("#login-submit")


def error_text(page) -> str:  # noqa: ANN001
    page.locator("#login-error").wait_for()
    return page.locator("#login-error").inner_text()


def test_a_directory_user_signs_in_on_the_login_page(server: LiveServer, page) -> None:  # noqa: ANN001
    page.goto(f"{server.url}/login")
    assert "organisation's password" in page.locator("#login-directory-hint").inner_text()
    fill_and_submit(page, server.url, "dana", pw("dana"))
    page.wait_for_url(f"{server.url}/tasks")
    assert page.locator("#who").inner_text().startswith("dana")
    shot(page, "ldap-signed-in")
    with server.admin() as a:  # the first sign-in made her an Argus user, marked as the directory's
        assert "dana" in {u["name"] for u in a.get("/api/v2/users").json()}


def test_a_user_disabled_in_the_directory_sees_the_sign_in_failure(server: LiveServer, page) -> None:  # noqa: ANN001
    fill_and_submit(page, server.url, "carol", pw("carol"))  # right password, locked in the directory
    assert error_text(page) == "Wrong user name, password or token."
    assert page.url.startswith(f"{server.url}/login")
    shot(page, "ldap-disabled-refused")


def test_a_directory_user_disabled_in_argus_is_told(server: LiveServer, page) -> None:  # noqa: ANN001
    fill_and_submit(page, server.url, "erik", pw("erik"))
    page.wait_for_url(f"{server.url}/tasks")
    with server.admin() as a:
        assert a.post("/api/v2/users/erik/disable").status_code == 200
    page.context.clear_cookies()
    fill_and_submit(page, server.url, "erik", pw("erik"))
    assert "disabled" in error_text(page)


def test_the_login_page_says_when_the_directory_is_down(tmp_path: Path, slapd: Slapd, page) -> None:  # noqa: ANN001, F811
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        **slapd.settings(ldap_url=f"ldap://127.0.0.1:{free_port()}", ldap_timeout_s=2.0))
    with live_server(settings) as srv:
        fill_and_submit(page, srv.url, "dana", pw("dana"))
        assert "cannot be reached" in error_text(page)

"""The Account page's Notifications section in a real Chromium (issue 24).

No Ray is needed here, so the server is the in-process one of the API tests (tests/helpers.live_server)
with its notification sender running, not the module-wide ``argus up`` of the other browser tests. A
real local HTTP receiver checks the signature of what the page's "Send test" makes the server send.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from argus.settings import Settings
from tests.helpers import LiveServer
from tests.notify_fixtures import ALLOW_LOCAL, Mailbox, Receiver, notifying_server
from tests.web.conftest import ARTIFACTS, answer, sign_in_with_token

pytestmark = [pytest.mark.browser]


@pytest.fixture
def server(tmp_path, mailbox: Mailbox) -> Iterator[LiveServer]:
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        smtp_host=mailbox.host, smtp_port=mailbox.port, notify_http_timeout_s=2.0,
                        notify_webhook_allow=ALLOW_LOCAL)
    with notifying_server(settings) as srv:
        yield srv


def test_add_a_webhook_send_a_test_see_it_delivered_and_remove_it(
        server: LiveServer, chromium, receiver: Receiver, mailbox: Mailbox) -> None:  # noqa: ANN001
    alice = server.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    ctx = chromium.new_context(viewport={"width": 1360, "height": 1000})
    requests: list[str] = []
    ctx.on("request", lambda r: requests.append(r.url))
    try:
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        sign_in_with_token(page, server.url, token)
        page.goto(f"{server.url}/account")
        page.wait_for_function("() => document.body.dataset.notifyLoaded === '1'")
        assert page.locator("#notify-body tr").count() == 0
        assert page.locator("#notify-events input[type=checkbox]").count() == 7
        assert not page.locator('#notify-kind option[value="email"]').is_disabled()  # SMTP is configured

        page.fill("#notify-target", "ftp://example.com/<b>x</b>")  # refused by the API, shown as text
        page.click("#notify-add")
        page.locator("#notify-status.error").wait_for()
        assert "target" in page.locator("#notify-status").inner_text()
        assert page.locator("#notify-status b").count() == 0

        page.fill("#notify-target", receiver.url)
        page.uncheck('#notify-events input[data-event="SUCCEEDED"]')
        page.click("#notify-add")
        page.locator("#notify-secret-box").wait_for()
        secret = page.locator("#notify-secret").inner_text().strip()
        assert len(secret) == 64
        row = page.locator("#notify-body tr").first
        row.wait_for()
        assert receiver.url in row.inner_text() and "SUCCEEDED" not in row.inner_text() and "FAILED" in row.inner_text()
        [ch] = alice.get("/api/v2/notifications").json()
        assert ch["events"] == ["FAILED", "CANCELED", "STALLED", "RESUMED", "IDLE_GPU", "MODEL_ALIAS"]

        receiver.secret = secret
        row.locator(".notify-test").click()
        assert receiver.wait_for(1)[0].signed_ok
        page.locator('#notify-deliveries-body tr[data-state="delivered"]').wait_for()
        assert "TEST" in page.locator("#notify-deliveries-body").inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "account-notifications-en.png"), full_page=True)

        page.select_option("#notify-kind", "email")
        page.fill("#notify-target", "alice@example.com")
        page.click("#notify-add")
        page.locator("#notify-body tr", has_text="alice@example.com").wait_for()
        assert page.locator("#notify-secret-box").is_hidden()  # e-mail has no secret
        page.locator("#notify-body tr", has_text="alice@example.com").locator(".notify-test").click()
        assert mailbox.wait_for(1)[0][1] == ["alice@example.com"]

        page.locator("#notify-body tr", has_text=receiver.url).locator(".notify-remove").click()
        answer(page)
        page.locator("#notify-body tr", has_text=receiver.url).wait_for(state="detached")
        assert [c["kind"] for c in alice.get("/api/v2/notifications").json()] == ["email"]
    finally:
        ctx.close()
    foreign = [u for u in requests if not (u.startswith(server.url + "/") or u.startswith("data:"))]
    assert not foreign, foreign

"""/api/v2/notifications over real HTTP, with the server's own sender thread delivering to a real local
HTTP receiver and a real SMTP server (issue 24)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from argus.settings import Settings
from tests.helpers import LiveServer, post_spec
from tests.notify_fixtures import ALLOW_LOCAL, Mailbox, Receiver, notifying_server
from tests.waiting import wait_until

SLEEPER = "kind: advanced\nworkload: job\nname: nap\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 60\n"


@pytest.fixture
def server(tmp_path, mailbox: Mailbox) -> Iterator[LiveServer]:
    """A live server whose operator configured SMTP (the test's aiosmtpd) and allows webhooks to the local
    receiver (loopback: refused otherwise), with its notification sender."""
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        smtp_host=mailbox.host, smtp_port=mailbox.port, smtp_from="argus@cluster.example.com",
                        notify_http_timeout_s=2.0, public_url="https://argus.example.com",
                        notify_webhook_allow=ALLOW_LOCAL)
    with notifying_server(settings) as srv:
        yield srv


def deliveries(client, channel_id: int, *, until: str, timeout: float = 20.0) -> list[dict]:
    seen: dict[str, object] = {}

    def reached() -> list[dict] | None:
        r = client.get(f"/api/v2/notifications/{channel_id}/deliveries")
        assert r.status_code == 200, r.text
        seen["deliveries"] = got = r.json()
        return got if got and got[0]["state"] == until else None

    return wait_until(reached, timeout,
                      what=lambda: f"the newest delivery {until}; deliveries: {seen.get('deliveries')}")


def test_webhook_created_listed_tested_and_told_about_a_cancel(server: LiveServer, receiver: Receiver) -> None:
    alice = server.new_user("alice")
    r = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": receiver.url,
                                                  "events": ["CANCELED", "FAILED"]})
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["kind"] == "webhook" and made["events"] == ["FAILED", "CANCELED"] and len(made["secret"]) == 64
    receiver.secret = made["secret"]
    listed = alice.get("/api/v2/notifications").json()
    assert [c["id"] for c in listed] == [made["id"]] and "secret" not in listed[0]
    assert listed[0]["target"] == receiver.url

    r = alice.post(f"/api/v2/notifications/{made['id']}/test")
    assert r.status_code == 202 and r.json()["event"] == "TEST"
    hit = receiver.wait_for(1)[0]
    assert hit.signed_ok and hit.headers["x-argus-event"] == "TEST"
    d = deliveries(alice, made["id"], until="delivered")[0]
    assert (d["event"], d["attempts"], d["last_error"], d["task_id"]) == ("TEST", 1, None, None)

    r = post_spec(alice, SLEEPER)
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    assert alice.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
    hit = receiver.wait_for(2)[1]
    body = json.loads(hit.body)
    assert hit.signed_ok and hit.headers["x-argus-event"] == "CANCELED"
    assert (body["task_id"], body["status"], body["termination_reason"], body["link"]) == (
        tid, "CANCELED", "USER_CANCELED", f"/tasks/{tid}")
    assert body["message"] == "canceled by alice"
    assert deliveries(alice, made["id"], until="delivered")[0]["task_id"] == tid

    assert alice.delete(f"/api/v2/notifications/{made['id']}").status_code == 204
    assert alice.get("/api/v2/notifications").json() == []
    with server.admin() as admin:
        actions = [e["action"] for e in admin.get("/api/v2/audit").json()["events"]]
    assert "notification.channel_added" in actions and "notification.channel_removed" in actions


def test_email_channel_receives_its_test_through_smtp(server: LiveServer, mailbox: Mailbox) -> None:
    bob = server.new_user("bob")
    r = bob.post("/api/v2/notifications", json={"kind": "email", "target": "bob@example.com"})
    assert r.status_code == 201, r.text
    ch = r.json()
    assert ch["secret"] is None and ch["events"] == ["SUCCEEDED", "FAILED", "CANCELED", "STALLED", "RESUMED", "IDLE_GPU", "MODEL_ALIAS"]
    assert bob.post(f"/api/v2/notifications/{ch['id']}/test").status_code == 202
    (mail_from, rcpt, msg), = mailbox.wait_for(1)
    assert mail_from == "argus@cluster.example.com" and rcpt == ["bob@example.com"]
    assert msg["Subject"] == "[argus] test notification"
    assert "https://argus.example.com/account" in msg.get_payload(decode=True).decode()
    assert deliveries(bob, ch["id"], until="delivered")[0]["state"] == "delivered"


def test_options_say_what_a_channel_can_be(server: LiveServer) -> None:
    alice = server.new_user("alice")
    assert alice.get("/api/v2/notifications/options").json() == {
        "kinds": ["webhook", "email"], "email_enabled": True,
        "events": ["SUCCEEDED", "FAILED", "CANCELED", "STALLED", "RESUMED", "IDLE_GPU", "MODEL_ALIAS"]}


def test_without_smtp_email_channels_are_refused_naming_the_setting(live) -> None:
    alice = live.new_user("alice")
    assert alice.get("/api/v2/notifications/options").json()["email_enabled"] is False
    r = alice.post("/api/v2/notifications", json={"kind": "email", "target": "alice@example.com"})
    assert r.status_code == 400
    [err] = r.json()["detail"]["errors"]
    assert err["field"] == "kind" and err["value"] == "email" and "smtp_host" in err["message"]
    assert alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://x.example.com/h"}).status_code == 201


def test_no_auth_no_notifications(live) -> None:
    with live.client() as anon:
        assert anon.get("/api/v2/notifications").status_code == 401
        assert anon.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://x.example.com"}).status_code == 401


def test_the_servers_sender_uses_the_operators_allowlist(tmp_path) -> None:
    """Creation checks the allowlist in the API; sending checks it again in the sender thread, which must
    get the same list from the server's Settings."""
    from argus.server import notification_sender
    from argus.services.webhook_target import parse_allow
    from tests.helpers import live_server

    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        notify_webhook_allow=["10.0.5.0/24", "127.0.0.1"])
    with live_server(settings) as srv:
        sender = notification_sender(srv.ctx)
        try:
            assert sender.webhook_allow == parse_allow(["10.0.5.0/24", "127.0.0.1"])
        finally:
            sender.db.dispose()

"""Notification channels under hostile input (issue 24): another user's channels, odd URLs and addresses.

Every refusal is a 400 in the house shape naming field, value and fix; another user's channel is a 404
whatever is asked of it; nothing is a 500.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.hostile

HUGE = "100000000000000000000"  # > 2**63


def _errors(r) -> dict[str, dict]:  # noqa: ANN001
    assert r.status_code == 400, (r.status_code, r.text[:500])
    detail = r.json()["detail"]
    assert {"code", "message", "errors"} <= set(detail), detail
    for e in detail["errors"]:
        assert {"field", "value", "message"} <= set(e) and e["message"]
    return {e["field"]: e for e in detail["errors"]}


def test_another_users_channel_is_not_found_whatever_is_asked(live) -> None:
    alice, mallory = live.new_user("alice"), live.new_user("mallory")
    ch = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com/h"}).json()
    for method, path in (("DELETE", f"/api/v2/notifications/{ch['id']}"),
                         ("POST", f"/api/v2/notifications/{ch['id']}/test"),
                         ("GET", f"/api/v2/notifications/{ch['id']}/deliveries")):
        r = mallory.request(method, path)
        assert r.status_code == 404 and r.json()["detail"]["code"] == "channel_not_found", (method, path, r.text)
        missing = mallory.request(method, path.replace(str(ch["id"]), "999999"))  # the same as one that never was
        assert missing.status_code == 404 and missing.json()["detail"]["code"] == "channel_not_found"
    assert mallory.get("/api/v2/notifications").json() == []
    with live.admin() as admin:  # an admin has no business with someone's inbox either
        assert admin.get(f"/api/v2/notifications/{ch['id']}/deliveries").status_code == 404
        assert admin.get("/api/v2/notifications").json() == []
    assert [c["id"] for c in alice.get("/api/v2/notifications").json()] == [ch["id"]]  # still there


@pytest.mark.parametrize("target", [
    "ftp://example.com/hook", "file:///etc/passwd", "javascript:alert(1)", "gopher://127.0.0.1:25/",
    "https:///no-host", "//example.com/hook", "example.com/hook", "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/", "http://0.0.0.0:8080/", "http://x.example.com:70000/", "https://a.example.com/a b",
    "https://a.example.com/\r\nX-Injected: 1", "https://a.example.com/" + "a" * 3000, "",
])
def test_webhook_urls_that_are_refused(live, target: str) -> None:
    alice = live.new_user("alice")
    err = _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": target}))["target"]
    assert "URL" in err["message"] or "http" in err["message"] or "address" in err["message"] or "characters" in err["message"]
    assert len(str(err["value"])) <= 200
    assert alice.get("/api/v2/notifications").json() == []


@pytest.mark.parametrize("target", [
    "not-an-address", "alice@", "@example.com", "alice@example", "Alice <alice@example.com>",
    "a@b.com\r\nBcc: everyone@example.com", "a@b.com,c@d.com", "a" * 300 + "@example.com",
])
def test_email_addresses_that_are_refused(tmp_path, target: str) -> None:
    from argus.settings import Settings
    from tests.helpers import live_server

    settings = Settings(state_dir=tmp_path / "s", sftp_enabled=False, verl_validation="off", smtp_host="127.0.0.1")
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        err = _errors(alice.post("/api/v2/notifications", json={"kind": "email", "target": target}))["target"]
        assert "e-mail address" in err["message"]


def test_bodies_that_are_refused_name_every_problem(live) -> None:
    alice = live.new_user("alice")
    errs = _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "ftp://x", "events": ["BOOM"]}))
    assert set(errs) == {"target", "events"} and errs["events"]["value"] == "BOOM"
    assert set(_errors(alice.post("/api/v2/notifications", json={"kind": "sms", "target": "", "events": ["BOOM"]}))) == {
        "kind", "target", "events"}
    assert "SUCCEEDED" in errs["events"]["message"]
    assert set(_errors(alice.post("/api/v2/notifications", json={}))) == {"kind", "target"}
    assert "events" in _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com",
                                                                          "events": "FAILED"}))
    assert "events" in _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com",
                                                                          "events": []}))
    assert "secret" in _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com",
                                                                          "secret": "mine"}))
    assert "kind" in _errors(alice.post("/api/v2/notifications", json={"kind": 5, "target": "https://a.example.com"}))
    r = alice.post("/api/v2/notifications", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    for path in (f"/api/v2/notifications/{HUGE}/deliveries", "/api/v2/notifications/0/deliveries",
                 "/api/v2/notifications/abc/deliveries"):
        assert "channel_id" in _errors(alice.get(path)), path


def test_one_user_cannot_pile_up_channels(live, monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.services import notifications

    monkeypatch.setattr(notifications, "MAX_CHANNELS_PER_USER", 3)
    alice = live.new_user("alice")
    for n in range(3):
        assert alice.post("/api/v2/notifications", json={"kind": "webhook", "target": f"https://a.example.com/{n}"}).status_code == 201
    r = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com/4"})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "too_many_channels"


# ---------------------------------------------------------------- webhooks cannot reach the platform's own network

INTERNAL_TARGETS = [
    "http://2852039166/", "http://0xA9FEA9FE/latest/meta-data/", "http://0251.0376.0251.0376/", "http://169.254.43518/",
    "http://[::ffff:169.254.169.254]/", "http://[::ffff:a9fe:a9fe]/", "http://127.1/", "http://0x7f.1:8080/h",
    "http://017700000001/", "http://127.0.0.1./", "http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://0/",
    "http://0x0:22/", "http://127.0.0.1:5432/", "http://10.0.0.7/", "http://172.16.0.1/", "http://192.168.1.1/",
    "http://100.64.0.1/", "http://[::1]:8265/", "http://[::]/", "http://[fc00::1]/", "http://[fe80::1%25eth0]/",
    "http://[fec0::1]/", "http://255.255.255.255/", "http://224.0.0.1/", "http://240.0.0.1/",
    "http://[2002:a9fe:a9fe::]/", "http://[64:ff9b::7f00:1]/", "https://[::ffff:10.0.0.1]:8443/",
]


def test_internal_addresses_in_every_spelling_are_refused_at_creation(live) -> None:
    alice = live.new_user("alice")
    for target in INTERNAL_TARGETS:
        err = _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": target}))
        assert set(err) == {"target"} and err["target"]["value"] == target, target
        message = err["target"]["message"]
        assert "internal address" in message and "notify_webhook_allow" in message, (target, message)
    assert alice.get("/api/v2/notifications").json() == []


def test_the_operators_allowlist_lets_internal_receivers_in(tmp_path) -> None:
    from argus.settings import Settings
    from tests.helpers import live_server

    settings = Settings(state_dir=tmp_path / "s", sftp_enabled=False, verl_validation="off",
                        notify_webhook_allow=["127.0.0.1", "10.0.5.0/24"])
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        for target in ("http://127.0.0.1:9000/h", "http://0x7f.0.0.1:9000/h", "http://10.0.5.9/h"):
            r = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": target})
            assert r.status_code == 201, (target, r.text)
        for target in ("http://127.0.0.2/h", "http://10.0.6.1/h", "http://169.254.169.254/"):
            assert "target" in _errors(alice.post("/api/v2/notifications", json={"kind": "webhook", "target": target}))


def test_a_name_that_resolves_to_loopback_is_refused_when_sending(tmp_path, receiver) -> None:  # noqa: ANN001
    from argus.services.notify_sender import REFUSED
    from argus.settings import Settings
    from tests.notify_fixtures import notifying_server
    from tests.waiting import wait_until

    port = receiver.url.rsplit(":", 1)[1].split("/")[0]
    settings = Settings(state_dir=tmp_path / "s", sftp_enabled=False, verl_validation="off", notify_http_timeout_s=2.0)
    with notifying_server(settings) as srv:
        alice = srv.new_user("alice")
        r = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": f"http://localhost:{port}/hook"})
        assert r.status_code == 201, r.text  # a name: judged when sending
        ch = r.json()["id"]
        assert alice.post(f"/api/v2/notifications/{ch}/test").status_code == 202

        def failed() -> dict | None:
            rows = alice.get(f"/api/v2/notifications/{ch}/deliveries").json()
            return rows[0] if rows and rows[0]["state"] == "failed" else None

        d = wait_until(failed, 20, what="the test delivery given up")
    assert d["last_error"] == REFUSED and d["attempts"] == 1 and receiver.hits == []


def test_the_test_button_is_rate_limited_per_user(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    mine = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://a.example.com/h"}).json()
    his = bob.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://b.example.com/h"}).json()
    assert alice.post("/api/v2/notifications/999999/test").status_code == 404  # not counted
    for _ in range(5):
        assert alice.post(f"/api/v2/notifications/{mine['id']}/test").status_code == 202
    r = alice.post(f"/api/v2/notifications/{mine['id']}/test")
    assert r.status_code == 429, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "too_many_tests" and "at most 5" in detail["message"] and "try again in" in detail["message"]
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert len(alice.get(f"/api/v2/notifications/{mine['id']}/deliveries").json()) == 5  # the 6th queued nothing
    assert bob.post(f"/api/v2/notifications/{his['id']}/test").status_code == 202  # per user

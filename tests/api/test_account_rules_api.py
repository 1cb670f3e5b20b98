"""Issue 25's account rules through real HTTP: an admin cannot disable themselves, changing one's own
password needs the current one, and a disabled account is told so only after a right password/token."""

from __future__ import annotations

import httpx

from tests.helpers import CLIENT_TIMEOUT_S
from tests.waiting import slack

PASSWORD = "correct horse battery"


def _errors(r: httpx.Response) -> dict[str, str]:
    return {e["field"]: e["message"] for e in r.json()["detail"].get("errors", [])}


def test_admin_cannot_disable_themselves(live):
    with live.admin() as a:
        r = a.post("/api/v2/users/admin/disable")
        assert r.status_code == 409, r.text
        assert r.json()["detail"]["code"] == "self_disable"
        assert "another administrator" in _errors(r)["name"]
        assert a.get("/api/v2/me").status_code == 200  # still signed in, still enabled
        live.new_user("bob")
        assert a.post("/api/v2/users/bob/disable").status_code == 200  # others: as before
        assert a.post("/api/v2/users/admin/enable").status_code == 200  # enabling oneself is harmless


def test_changing_a_password_needs_the_current_one(live):
    alice = live.new_user("alice")
    assert alice.get("/api/v2/me").json()["has_password"] is False
    assert alice.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204  # first: no current
    assert alice.get("/api/v2/me").json()["has_password"] is True
    r = alice.post("/api/v2/me/password", json={"password": "a new long password"})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "current_password_required"
    assert "current password" in _errors(r)["current_password"]
    r = alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": "nope nope"})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "wrong_current_password"
    assert "administrator" in _errors(r)["current_password"]
    ok = alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": PASSWORD})
    assert ok.status_code == 204, ok.text
    with live.admin() as a:  # an admin resetting someone else's needs no current password
        assert a.post("/api/v2/users/alice/password", json={"password": "reset by admin"}).status_code == 204
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
        assert b.post("/api/v2/session", json={"user": "alice", "password": "reset by admin"}).status_code == 200


def test_disabled_account_is_told_only_after_the_right_password(live):
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].split(" ", 1)[1]
    assert alice.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
    with live.admin() as a:
        assert a.post("/api/v2/users/alice/disable").status_code == 200
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
        wrong = b.post("/api/v2/session", json={"user": "alice", "password": "wrong password"})
        assert wrong.status_code == 401 and wrong.json()["detail"]["code"] == "bad_credentials"
        assert "disabled" not in wrong.text  # a guesser learns nothing about the account
        right = b.post("/api/v2/session", json={"user": "alice", "password": PASSWORD})
        assert right.status_code == 403 and right.json()["detail"]["code"] == "user_disabled", right.text
        assert "ask an administrator" in right.json()["detail"]["message"] and "argus_session" not in b.cookies
        tok = b.post("/api/v2/session", json={"token": token})
        assert tok.status_code == 403 and tok.json()["detail"]["code"] == "user_disabled"
        bad = b.post("/api/v2/session", json={"token": "argus_not-a-token"})
        assert bad.status_code == 401 and "disabled" not in bad.text
    with live.admin() as a:
        assert a.post("/api/v2/users/alice/enable").status_code == 200
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
        assert b.post("/api/v2/session", json={"user": "alice", "password": PASSWORD}).status_code == 200


def test_admin_sets_a_users_storage_quota(live):
    alice = live.new_user("alice")
    with live.admin() as a:
        r = a.patch("/api/v2/users/alice", json={"quota_bytes": 0})
        assert r.status_code == 400 and "quota_bytes" in _errors(r)
        r = a.patch("/api/v2/users/alice", json={"quota_bytes": 5 << 20})
        assert r.status_code == 200 and r.json()["quota_bytes"] == 5 << 20
        assert alice.get("/api/v2/files/usage").json()["quota_bytes"] == 5 << 20  # the file store applies it
        events = a.get("/api/v2/audit", params={"user": "alice", "action": "user.limits_changed"}).json()["events"]
        assert events[0]["detail"] == {"quota_bytes": [None, 5 << 20]} and events[0]["target"] == "alice"
        assert a.patch("/api/v2/users/alice", json={"quota_bytes": None}).json()["quota_bytes"] is None
        stored = {s["name"]: s for s in a.get("/api/v2/users/storage").json()}
        assert stored["alice"]["quota_bytes"] is None  # back to the platform default (none here)


def test_guessing_the_current_password_is_throttled(settings):
    from tests.helpers import live_server

    settings.login_max_failures = 3
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        assert alice.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
        for n in range(3):
            r = alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": f"g{n}"})
            assert r.status_code == 400, r.text
        r = alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": PASSWORD})
        assert r.status_code == 429 and r.json()["detail"]["code"] == "too_many_attempts"  # even the right one, a while

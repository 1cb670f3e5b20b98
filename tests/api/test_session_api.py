"""Browser sessions through real HTTP (real uvicorn, real SQLite): sign-in, cookie flags, CSRF, sign-out."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import select, update

from argus.db.models import UserModel, WebSessionModel
from argus.settings import Settings
from tests.helpers import CLIENT_TIMEOUT_S, api_client, live_server
from tests.sftp_process import TOKEN, sftp_server_process
from tests.waiting import slack

PASSWORD = "correct horse battery"


def _user_with_password(live, name: str) -> str:
    """Create ``name`` with PASSWORD; returns their API token."""
    c = live.new_user(name)
    assert c.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
    return c.headers["Authorization"].split(" ", 1)[1]


def _browser(live) -> httpx.Client:
    return httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S))


def _sign_in(b: httpx.Client, **body) -> httpx.Response:
    return b.post("/api/v2/session", json=body)


def _set_cookie_header(r: httpx.Response) -> str:
    headers = [v for k, v in r.headers.multi_items() if k.lower() == "set-cookie"]
    assert len(headers) == 1, headers
    return headers[0]


def test_password_sign_in_cookie_flags_and_session_row(live):
    _user_with_password(live, "alice")
    with _browser(live) as b:
        r = _sign_in(b, user="alice", password=PASSWORD)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["user"] == "alice" and body["is_admin"] is False and len(body["csrf_token"]) >= 32
        cookie = _set_cookie_header(r)
        flags = [p.strip().lower() for p in cookie.split(";")]
        assert flags[0].startswith("argus_session=")
        assert "httponly" in flags and "samesite=strict" in flags and "path=/" in flags
        assert "max-age=43200" in flags  # WEB_SESSION_HOURS default 12
        assert "secure" not in flags  # plain http: a Secure cookie would never come back
        sid = b.cookies["argus_session"]

        # the database holds hashes only, never the cookie value or the CSRF token
        with live.ctx.db.session() as s:
            row = s.scalar(select(WebSessionModel))
            assert row.session_hash == hashlib.sha256(sid.encode()).hexdigest()
            assert row.csrf_hash == hashlib.sha256(body["csrf_token"].encode()).hexdigest()
            assert sid not in (row.session_hash, row.csrf_hash)

        who = b.get("/api/v2/session")
        assert who.status_code == 200 and who.json() == body  # a reloaded page gets the same CSRF token back
        assert b.get("/api/v2/me").json()["name"] == "alice"  # every /api/v2 endpoint takes the cookie


def test_token_sign_in_and_admin(live):
    with _browser(live) as b:
        r = _sign_in(b, token=live.admin_token)
        assert r.status_code == 200, r.text
        assert r.json()["user"] == "admin" and r.json()["is_admin"] is True
        assert b.get("/api/v2/users").status_code == 200


@pytest.mark.parametrize("body", [
    {"user": "alice", "password": "wrong password"},
    {"user": "nobody", "password": PASSWORD},
    {"token": "argus_not-a-token"},
])
def test_wrong_credentials_are_one_generic_401(live, body):
    _user_with_password(live, "alice")
    with _browser(live) as b:
        r = _sign_in(b, **body)
        assert r.status_code == 401
        assert r.json()["detail"] == {"code": "bad_credentials",
                                      "message": "wrong user name or password, or invalid token"}
        assert "set-cookie" not in r.headers
        assert b.get("/api/v2/session").status_code == 401


def test_malformed_sign_in_bodies_are_400(live):
    with _browser(live) as b:
        for body in ({}, {"user": "alice"}, {"password": "x"}, {"user": "a", "password": "b", "token": "c"},
                     {"token": "t", "extra": 1}):
            assert _sign_in(b, **body).status_code == 400, body


def test_repeated_failures_are_throttled(live):
    live.ctx.settings.login_max_failures = 3
    _user_with_password(live, "alice")
    with _browser(live) as b:
        for _ in range(3):
            assert _sign_in(b, user="alice", password="wrong password").status_code == 401
        r = _sign_in(b, user="alice", password=PASSWORD)  # even the right one, from this address, for a while
        assert r.status_code == 429 and r.json()["detail"]["code"] == "too_many_attempts"


def test_sign_out_revokes_server_side(live):
    _user_with_password(live, "alice")
    with _browser(live) as b:
        csrf = _sign_in(b, user="alice", password=PASSWORD).json()["csrf_token"]
        sid = b.cookies["argus_session"]
        assert b.delete("/api/v2/session").status_code == 403  # sign-out is a write: needs the CSRF token
        r = b.delete("/api/v2/session", headers={"X-CSRF-Token": csrf})
        assert r.status_code == 204
        cleared = _set_cookie_header(r).lower()
        assert cleared.startswith("argus_session=") and "max-age=0" in cleared
    with live.ctx.db.session() as s:
        assert s.scalar(select(WebSessionModel.revoked_at)) is not None
    # a copy of the old cookie no longer works anywhere
    with httpx.Client(base_url=live.url, cookies={"argus_session": sid}, timeout=slack(CLIENT_TIMEOUT_S)) as stolen:
        assert stolen.get("/api/v2/session").status_code == 401
        assert stolen.get("/api/v2/me").status_code == 401
        assert stolen.delete("/api/v2/session").status_code == 204  # idempotent


def test_disabled_user_sessions_stop_at_once(live):
    _user_with_password(live, "alice")
    with _browser(live) as b, live.admin() as admin:
        _sign_in(b, user="alice", password=PASSWORD)
        assert b.get("/api/v2/me").status_code == 200
        # checked on every request: a flag flipped in the database (no revoke) is enough
        with live.ctx.db.session() as s:
            s.execute(update(UserModel).where(UserModel.name == "alice").values(disabled=True))
        assert b.get("/api/v2/me").status_code == 401
        with live.ctx.db.session() as s:
            s.execute(update(UserModel).where(UserModel.name == "alice").values(disabled=False))
        assert b.get("/api/v2/me").status_code == 200

        # the admin's disable also ends the session: enabling again does not revive the cookie
        assert admin.post("/api/v2/users/alice/disable").status_code == 200
        assert b.get("/api/v2/me").status_code == 401
        assert admin.post("/api/v2/users/alice/enable").status_code == 200
        assert b.get("/api/v2/me").status_code == 401
        assert _sign_in(b, user="alice", password=PASSWORD).status_code == 200  # a fresh sign-in works


def test_disabled_user_cannot_sign_in(live):
    token = _user_with_password(live, "alice")
    with live.admin() as admin:
        assert admin.post("/api/v2/users/alice/disable").status_code == 200
    with _browser(live) as b:
        # refused; told "disabled" (403) because the credentials were right (issue 25), no cookie set
        assert _sign_in(b, user="alice", password=PASSWORD).status_code == 403
        assert _sign_in(b, token=token).status_code == 403
        assert "argus_session" not in b.cookies


def test_cookie_writes_need_csrf_token_and_same_origin(live):
    _user_with_password(live, "alice")
    spec = "kind: basic\n"  # rejected (400) once past authentication: enough to tell the layers apart
    ytype = {"Content-Type": "application/yaml"}
    with _browser(live) as b:
        csrf = _sign_in(b, user="alice", password=PASSWORD).json()["csrf_token"]
        r = b.post("/api/v2/tasks", content=spec, headers=ytype)
        assert r.status_code == 403 and r.json()["detail"]["code"] == "csrf_failed"
        r = b.post("/api/v2/tasks", content=spec, headers={**ytype, "X-CSRF-Token": "0" * len(csrf)})
        assert r.status_code == 403 and r.json()["detail"]["code"] == "csrf_failed"
        ok = {**ytype, "X-CSRF-Token": csrf}
        assert b.post("/api/v2/tasks", content=spec, headers=ok).status_code == 400  # reached admission

        # a page on another site, even one that somehow learnt the CSRF token
        for hostile in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                        {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
            r = b.post("/api/v2/tasks", content=spec, headers={**ok, **hostile})
            assert r.status_code == 403 and r.json()["detail"]["code"] == "cross_site", hostile
        assert b.get("/api/v2/me", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        r = b.post("/api/v2/session", json={"user": "alice", "password": PASSWORD},
                   headers={"Origin": "https://evil.example"})
        assert r.status_code == 403  # no login CSRF either

        # the page itself: same origin, as a browser sends it
        same = {**ok, "Origin": live.url, "Sec-Fetch-Site": "same-origin"}
        assert b.post("/api/v2/tasks", content=spec, headers=same).status_code == 400
        assert b.get("/api/v2/me", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200


def test_bearer_tokens_unchanged(live):
    alice = live.new_user("alice")
    r = alice.post("/api/v2/tasks", content="kind: basic\n", headers={"Content-Type": "application/yaml",
                                                                       "Origin": "https://evil.example"})
    assert r.status_code == 400  # no CSRF token, no origin rule: a bearer token is not ambient authority
    assert alice.get("/api/v2/me").json()["name"] == "alice"
    with live.client("argus_wrong") as bad:
        assert bad.get("/api/v2/me").status_code == 401
    # a bad bearer token is refused even beside a good cookie (no fall-back)
    _user_with_password(live, "bob")
    with _browser(live) as b:
        _sign_in(b, user="bob", password=PASSWORD)
        assert b.get("/api/v2/me", headers={"Authorization": "Bearer argus_wrong"}).status_code == 401
        assert b.get("/api/v2/me").json()["name"] == "bob"


def test_public_https_url_makes_the_cookie_secure_and_is_an_own_origin(tmp_path):
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        public_url="https://argus.example/")
    with live_server(settings) as live, _browser(live) as b:
        r = b.post("/api/v2/session", json={"token": live.admin_token}, headers={"Origin": "https://argus.example"})
        assert r.status_code == 200, r.text
        flags = [p.strip().lower() for p in _set_cookie_header(r).split(";")]
        assert "secure" in flags and "httponly" in flags and "samesite=strict" in flags
        r = b.post("/api/v2/session", json={"token": live.admin_token}, headers={"Origin": "http://argus.example"})
        assert r.status_code == 403  # http:// is another origin than https://


def test_secure_cookie_behind_trusted_proxy(tmp_path):
    """https seen by a proxy on this host: X-Forwarded-Proto counts once the operator trusts its address."""
    base = {"sftp_enabled": False, "verl_validation": "off"}
    for trusted, secure in (([], False), (["127.0.0.1"], True)):
        settings = Settings(state_dir=tmp_path / str(secure), trusted_proxies=trusted, **base)
        with live_server(settings) as live, _browser(live) as b:
            r = b.post("/api/v2/session", json={"token": live.admin_token}, headers={"X-Forwarded-Proto": "https"})
            assert r.status_code == 200
            assert ("secure" in [p.strip().lower() for p in _set_cookie_header(r).split(";")]) is secure, trusted


@pytest.mark.hostile
def test_a_forwarded_for_header_from_an_untrusted_peer_does_not_reset_the_limiter(tmp_path):
    """Every task on the head's node reaches the API from 127.0.0.1: its X-Forwarded-For is not believed, so a
    new address per guess still ends in 429 (the real server process: argus.server.serve's uvicorn options)."""
    with sftp_server_process(tmp_path, "sam", quiet=True) as server, \
            api_client(server.url, TOKEN) as admin, _browser(server) as b:
        token = admin.post("/api/v2/users/sam/tokens", json={}).json()["token"]
        assert api_client(server.url, token).post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
        codes = [_sign_in_from(b, f"203.0.113.{i}", user="sam", password="wrong password").status_code
                 for i in range(1, 8)]
        assert codes[:5] == [401] * 5 and codes[5:] == [429, 429], codes  # login_max_failures: 5
        assert _sign_in_from(b, "198.51.100.9", user="sam", password=PASSWORD).status_code == 429
        audit = admin.get("/api/v2/audit", params={"action": "login.lockout"})
        assert audit.status_code == 200 and audit.json()["events"], audit.text
        assert "203.0.113." not in audit.text and "127.0.0.1" in audit.text, audit.text  # the real peer


def _sign_in_from(b: httpx.Client, forwarded_for: str, **body) -> httpx.Response:
    return b.post("/api/v2/session", json=body, headers={"X-Forwarded-For": forwarded_for})


def test_expired_session_is_refused(live):
    _user_with_password(live, "alice")
    with _browser(live) as b:
        _sign_in(b, user="alice", password=PASSWORD)
        assert b.get("/api/v2/me").status_code == 200
        with live.ctx.db.session() as s:
            row = s.scalar(select(WebSessionModel))
            row.expires_at = row.created_at
        r = b.get("/api/v2/session")
        assert r.status_code == 401 and r.json()["detail"]["code"] == "session_expired"


def test_hostile_sign_in_bodies_never_500_nor_echo_secrets(live):
    _user_with_password(live, "alice")
    cases = [('{"user": "alice", "password": "\\ud800secret"}', 400), ('{"user": "al\\ud800", "password": "x"}', 400),
             ('{"token": "\\ud800secret"}', 400), ('{"user": "alice\\u0000", "password": "x"}', 401),
             ('{"token": "a\\u0000"}', 401), ('{"user": "' + "a" * 65 + '", "password": "x"}', 400),
             ('{"user": "alice", "password": "' + "p" * 5000 + '"}', 400), ("[1]", 400), ("null", 400), ("{", 400)]
    with _browser(live) as b:
        for body, status in cases:
            r = b.post("/api/v2/session", content=body, headers={"Content-Type": "application/json"})
            assert r.status_code == status, (body[:40], r.text[:200])
            assert "secret" not in r.text


def test_signing_in_again_ends_the_old_session(live):
    _user_with_password(live, "alice")
    with _browser(live) as b:
        _sign_in(b, user="alice", password=PASSWORD)
        first = b.cookies["argus_session"]
        assert _sign_in(b, token=live.admin_token).json()["user"] == "admin"
        assert b.cookies["argus_session"] != first  # a fresh id at every sign-in (no fixation)
    with httpx.Client(base_url=live.url, cookies={"argus_session": first}, timeout=slack(CLIENT_TIMEOUT_S)) as old:
        assert old.get("/api/v2/me").status_code == 401

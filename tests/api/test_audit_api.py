"""The audit log through real HTTP: each event kind is recorded, only admins list it, pages are stable."""

from __future__ import annotations

import asyncssh
from sqlalchemy import select

from argus.db.models import AuditEventModel
from argus.services import audit
from argus.services.files import FileStore
from argus.sftp.server import SftpServer
from tests.api.test_tasks_api import ADV, submit


def _events(live, **params):
    with live.admin() as a:
        r = a.get("/api/v2/audit", params=params)
    assert r.status_code == 200, r.text
    return r.json()["events"]


def _one(live, action):
    found = _events(live, action=action)
    assert len(found) == 1, (action, found)
    return found[0]


def test_admin_actions_are_recorded(live):
    alice = live.new_user("alice")  # user.created + token.created by the admin
    created = _one(live, audit.USER_CREATED)
    assert created["actor"] == "admin" and created["target"] == "alice" and created["source_ip"] == "127.0.0.1"
    assert created["detail"] == {"is_admin": False}
    tok = _one(live, audit.TOKEN_CREATED)
    assert tok["target"] == "alice" and tok["detail"]["prefix"].startswith("argus_")
    assert not any("token" == k for k in tok["detail"])  # never the secret itself
    with live.admin() as a:
        assert a.post("/api/v2/users/alice/disable").status_code == 200
        assert a.post("/api/v2/users/alice/enable").status_code == 200
        assert a.delete(f"/api/v2/users/alice/tokens/{tok['detail']['token_id']}").status_code == 200
    assert _one(live, audit.USER_DISABLED)["target"] == "alice"
    assert _one(live, audit.USER_ENABLED)["target"] == "alice"
    assert _one(live, audit.TOKEN_REVOKED)["detail"]["token_id"] == tok["detail"]["token_id"]
    assert alice.get("/api/v2/me").status_code == 401


def test_a_refused_action_leaves_no_event(live):
    live.new_user("alice")
    with live.admin() as a:
        assert a.post("/api/v2/users", json={"name": "alice"}).status_code == 409
        assert a.post("/api/v2/users/nobody/disable").status_code == 404
    assert len(_events(live, action=audit.USER_CREATED)) == 1
    assert _events(live, action=audit.USER_DISABLED) == []


def test_password_and_ssh_keys_are_recorded(live):
    alice = live.new_user("alice")
    assert alice.post("/api/v2/me/password", json={"password": "correct horse battery"}).status_code == 204
    pub = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    key = alice.post("/api/v2/me/keys", json={"public_key": pub}).json()
    assert alice.delete(f"/api/v2/me/keys/{key['id']}").status_code == 204
    assert _one(live, audit.USER_PASSWORD_SET)["actor"] == "alice"
    with live.admin() as a:  # an admin's reset of someone else's password names both
        assert a.post("/api/v2/users/alice/password", json={"password": "another horse battery"}).status_code == 204
    reset = _events(live, action=audit.USER_PASSWORD_SET)[0]
    assert (reset["actor"], reset["target"]) == ("admin", "alice")
    added, removed = _one(live, audit.SSH_KEY_ADDED), _one(live, audit.SSH_KEY_REMOVED)
    assert added["detail"]["fingerprint"] == removed["detail"]["fingerprint"] == key["fingerprint"]


def test_web_sign_in_lockout_is_recorded_once(live):
    live.ctx.settings.login_max_failures = 3
    with live.client() as b:
        for _ in range(5):
            b.post("/api/v2/session", json={"user": "alice", "password": "wrong password"})
    lock = _one(live, audit.LOGIN_LOCKOUT)
    assert lock["target"] == "alice" and lock["source_ip"] == "127.0.0.1"
    assert lock["detail"]["via"] == "web" and lock["detail"]["scope"] == "user+address"


def test_sftp_lockout_is_recorded(live):
    s = live.ctx.settings
    server = SftpServer(s, live.ctx.db, FileStore(s.root))
    for _ in range(s.login_max_failures):
        server.limiter.failed("bob", "10.1.2.3")
    lock = _one(live, audit.LOGIN_LOCKOUT)
    assert lock["detail"]["via"] == "sftp" and lock["source_ip"] == "10.1.2.3" and lock["actor"] == "bob"


def test_cancel_by_someone_else_is_recorded_and_by_owner_is_not(live):
    alice = live.new_user("alice")
    own, other = (submit(alice, ADV).json()["task_id"] for _ in range(2))
    assert alice.post(f"/api/v2/tasks/{own}/cancel").status_code == 200
    with live.admin() as a:
        assert a.post(f"/api/v2/tasks/{other}/cancel").status_code == 200
    ev = _one(live, audit.TASK_CANCELED_BY_OTHER)
    assert ev["actor"] == "admin" and ev["target"] == other
    assert ev["detail"] == {"owner": "alice", "status_was": "QUEUED"}


def test_admin_token_reset_is_recorded(live):
    from argus.services.users import reset_admin_token

    with live.ctx.db.session() as session:
        reset_admin_token(session, live.ctx.settings.root, live.ctx.settings.admin_name)
    with live.ctx.db.session() as session:
        rows = list(session.scalars(select(AuditEventModel).where(AuditEventModel.action == audit.ADMIN_TOKEN_RESET)))
    assert len(rows) == 1 and rows[0].target == live.ctx.settings.admin_name


def test_only_admins_list_the_audit_log(live):
    alice = live.new_user("alice")
    r = alice.get("/api/v2/audit")
    assert r.status_code == 403 and r.json()["detail"]["code"] == "forbidden"
    with live.client() as anonymous:
        assert anonymous.get("/api/v2/audit").status_code == 401


def test_pages_newest_first_with_filters(live):
    for i in range(7):
        live.new_user(f"user{i}")
    with live.admin() as a:
        seen, cursor = [], None
        while True:
            params = {"action": audit.USER_CREATED, "limit": 3, **({"cursor": cursor} if cursor else {})}
            page = a.get("/api/v2/audit", params=params).json()
            seen += [e["target"] for e in page["events"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [f"user{i}" for i in reversed(range(7))]
        assert len(a.get("/api/v2/audit", params={"actor": "admin"}).json()["events"]) == 14
        assert a.get("/api/v2/audit", params={"actor": "nobody"}).json()["events"] == []
        assert a.get("/api/v2/audit", params={"since": "2999-01-01T00:00:00"}).json()["events"] == []
        for bad in ({"action": "user.exploded"}, {"limit": 0}, {"limit": 501}, {"cursor": "nonsense"}):
            r = a.get("/api/v2/audit", params=bad)
            assert r.status_code == 400, (bad, r.text)
            assert r.json()["detail"]["errors"][0]["field"] in bad

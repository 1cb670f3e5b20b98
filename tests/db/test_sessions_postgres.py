"""Browser sessions and dry runs on PostgreSQL (the cluster-mode database): same answers as on SQLite."""

import httpx

from argus.settings import Settings
from tests.db.test_postgres import SPEC, pg_admin_url, pg_url  # noqa: F401 - fixtures
from tests.helpers import CLIENT_TIMEOUT_S, live_server
from tests.waiting import slack


def test_sessions_and_dry_run_on_postgres(pg_url, tmp_path):  # noqa: F811
    settings = Settings(state_dir=tmp_path, database_url=pg_url, sftp_enabled=False, verl_validation="off")
    with live_server(settings) as srv, srv.admin() as admin:
        alice = srv.new_user("alice")
        assert alice.post("/api/v2/me/password", json={"password": "correct horse"}).status_code == 204
        with httpx.Client(base_url=srv.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
            # a NUL cannot reach PostgreSQL (it would refuse the query): a plain 401
            assert b.post("/api/v2/session", json={"user": "alice\u0000", "password": "x"}).status_code == 401
            r = b.post("/api/v2/session", json={"user": "alice", "password": "correct horse"})
            assert r.status_code == 200, r.text
            csrf = r.json()["csrf_token"]
            assert b.get("/api/v2/session").json()["user"] == "alice"
            ytype = {"Content-Type": "application/yaml", "X-CSRF-Token": csrf}
            r = b.post("/api/v2/tasks", params={"dry_run": "true"}, content=SPEC, headers=ytype)
            assert r.status_code == 200, r.text
            assert b.get("/api/v2/tasks").json()["total"] == 0
            assert b.post("/api/v2/tasks", content=SPEC, headers=ytype).status_code == 201
            assert admin.post("/api/v2/users/alice/disable").status_code == 200
            assert b.get("/api/v2/me").status_code == 401
            assert b.delete("/api/v2/session", headers={"X-CSRF-Token": csrf}).status_code == 204

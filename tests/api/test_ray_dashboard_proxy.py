"""The Ray dashboard proxy trusts nothing the task or its owner can write (issue 33, high).

A running task's "dashboard" here is a web server of the test's (what a task can put on its dashboard
port: any HTML and script). The proxy finds it only through the launcher's record in ``<root>/.argus``;
a ``status.json`` the owner rewrites through the files API points it nowhere. Whatever it serves comes
back sandboxed (CSP ``sandbox`` without ``allow-same-origin``, ``nosniff``, no referrer); a browser gets
there through a view key, which only opens that task's dashboard; a malformed path is a 400.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import update

from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.launcher.dashboard_record import dashboard_record_path, write_dashboard_record
from argus.settings import Settings
from tests.helpers import CLIENT_TIMEOUT_S, LiveServer, live_server, submit_spec
from tests.waiting import slack

pytestmark = pytest.mark.hostile
SPEC = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"
TOKEN = "ab" * 24
EVIL = b"<html><script>fetch('/api/v2/me/tokens',{method:'POST'})</script>Ray Dashboard</html>"


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", "argus_session=planted; Path=/")  # dropped: not a passed header
        self.end_headers()
        self.wfile.write(EVIL)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def page() -> Iterator[http.server.HTTPServer]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Page)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = Settings(state_dir=tmp_path_factory.mktemp("dash"), sftp_enabled=False, verl_validation="off",
                        task_ray_dashboard=True)

    def configure(ctx) -> None:  # noqa: ANN001
        ctx.nodes = lambda: {"nodes": [{"node_id": "n1", "ip": "127.0.0.1", "alive": True}]}

    with live_server(settings, configure) as s:
        yield s


def _running(srv: LiveServer, client: httpx.Client) -> str:
    tid = submit_spec(client, SPEC)
    with srv.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(status="RUNNING", attempts=1,
                                                                      submission_id=f"{tid}-a1"))
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="RUNNING", node_id="n1"))
    return tid


def test_a_status_json_the_owner_writes_points_the_proxy_nowhere(srv, page) -> None:
    with srv.new_user("mallory") as mallory:
        tid = _running(srv, mallory)
        (srv.ctx.settings.root / "users" / "mallory" / "jobs" / tid).mkdir(parents=True)  # as a running task has
        forged = json.dumps({"attempt": 1, "ray_dashboard": {"port": page.server_port, "token": TOKEN}})
        r = mallory.put("/api/v2/files/content", params={"path": f"jobs/{tid}/status.json"}, content=forged.encode())
        assert r.status_code == 201, r.text
        r = mallory.get(f"/api/v2/tasks/{tid}/ray-dashboard/")
        assert r.status_code == 404 and r.json()["detail"]["code"] == "no_ray_dashboard", r.text
        assert not page.seen


def test_proxied_pages_are_sandboxed_and_reach_only_the_launchers_record(srv, page) -> None:
    with srv.new_user("olive") as olive, srv.new_user("peggy") as peggy:
        tid = _running(srv, olive)
        write_dashboard_record(srv.ctx.settings.root, tid, 1, page.server_port, TOKEN)
        assert oct(dashboard_record_path(srv.ctx.settings.root, tid, 1).stat().st_mode & 0o777) == "0o600"
        api = olive.get(f"/api/v2/tasks/{tid}/ray-dashboard/static/x.js")  # an API client, with its token
        assert api.status_code == 200 and api.content == EVIL
        assert page.seen[-1] == ("/static/x.js", f"Bearer {TOKEN}")  # the token goes to the dashboard only
        for r in (api, _browser_open(srv, olive, tid)):
            csp = r.headers["content-security-policy"]
            assert csp.startswith("sandbox ") and "allow-same-origin" not in csp, csp
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] == "no-referrer"
            assert "set-cookie" not in r.headers
            assert TOKEN not in r.text and TOKEN not in str(r.headers)
        assert peggy.get(f"/api/v2/tasks/{tid}/ray-dashboard").status_code == 404  # not hers


def _browser_open(srv: LiveServer, client: httpx.Client, tid: str) -> httpx.Response:
    """What a browser does: open …/ray-dashboard, follow to the view key, then fetch without any credential."""
    r = client.get(f"/api/v2/tasks/{tid}/ray-dashboard")
    assert r.status_code == 307 and "/ray-dashboard/~" in r.headers["location"], r.text
    with httpx.Client(base_url=srv.url, timeout=slack(CLIENT_TIMEOUT_S)) as anonymous:  # a sandboxed page's own requests carry no cookie
        page = anonymous.get(r.headers["location"])
        assert page.status_code == 200 and page.content == EVIL
        assert page.headers["access-control-allow-origin"] == "*"
        sub = anonymous.get(r.headers["location"] + "api/v0/nodes", headers={"Origin": "null"})
        assert sub.status_code == 200
    return page


def test_a_view_key_opens_only_its_task_and_ends_with_its_viewer(srv, page) -> None:
    with srv.new_user("quinn") as quinn:
        first, second = _running(srv, quinn), _running(srv, quinn)
        for tid in (first, second):
            write_dashboard_record(srv.ctx.settings.root, tid, 1, page.server_port, TOKEN)
        key_url = quinn.get(f"/api/v2/tasks/{first}/ray-dashboard").headers["location"]
        key = key_url.split("/~", 1)[1].rstrip("/")
        with httpx.Client(base_url=srv.url, timeout=slack(CLIENT_TIMEOUT_S)) as anonymous:
            assert anonymous.get(key_url).status_code == 200
            assert anonymous.get(f"/api/v2/tasks/{second}/ray-dashboard/~{key}/").status_code == 401
            expires, uid, mac = key.split(".")
            forged = f"{int(expires) + 10**6}.{uid}.{mac}"
            assert anonymous.get(f"/api/v2/tasks/{first}/ray-dashboard/~{forged}/").status_code == 401
            assert anonymous.get(f"/api/v2/tasks/{first}/ray-dashboard/~garbage/").status_code == 401
            with srv.ctx.db.session() as s:
                s.execute(update(UserModel).where(UserModel.name == "quinn").values(disabled=True))
            assert anonymous.get(key_url).status_code == 401


@pytest.mark.parametrize("path", ["%00/x", "a/%00", "%0d%0aX-Injected:%201", "../../../etc/passwd", "a/..%2f..%2fb",
                                  "%5c%5cevil", "a/%2e%2e/b"])
def test_a_malformed_dashboard_path_is_a_400(srv, page, path: str) -> None:
    with srv.new_user(f"rita{abs(hash(path)) % 10**6}") as rita:
        tid = _running(srv, rita)
        write_dashboard_record(srv.ctx.settings.root, tid, 1, page.server_port, TOKEN)
        seen = len(page.seen)
        r = rita.get(f"/api/v2/tasks/{tid}/ray-dashboard/{path}")
        assert r.status_code in (400, 404), (path, r.status_code, r.text[:300])
        assert r.status_code != 500
        if r.status_code == 400:
            assert r.json()["detail"]["code"] == "bad_path"
        assert len(page.seen) == seen, page.seen[seen:]  # nothing malformed reached the dashboard

"""Test helpers: a real uvicorn server on a free port backed by a real SQLite file."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

import httpx
import uvicorn

from argus.api.app import create_app
from argus.api.context import AppContext
from argus.server import build_context, forwarded_headers
from argus.settings import Settings
from tests.waiting import slack, wait_until


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# An HTTP client's read time-out: longer than the server's own verl time-out (Settings.verl_timeout_s, 60 s),
# which a dry run may spend composing a spec with verl.
CLIENT_TIMEOUT_S = 90.0


@dataclass
class LiveServer:
    url: str
    admin_token: str
    ctx: AppContext

    def client(self, token: str | None = None) -> httpx.Client:
        return api_client(self.url, token)

    def admin(self) -> httpx.Client:
        return self.client(self.admin_token)

    def new_user(self, name: str) -> httpx.Client:
        return new_user_client(self.url, self.admin_token, name)


def api_client(url: str, token: str | None = None) -> httpx.Client:
    """An HTTP client of the server at ``url``, with ``token`` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=slack(CLIENT_TIMEOUT_S))


def new_user_client(url: str, admin_token: str, name: str) -> httpx.Client:
    """Create user ``name`` with the admin's token on the server at ``url``; a client with a token of theirs."""
    with api_client(url, admin_token) as a:
        r = a.post("/api/v2/users", json={"name": name})
        assert r.status_code == 201, r.text
        t = a.post(f"/api/v2/users/{name}/tokens", json={})
        assert t.status_code == 201, t.text
    return api_client(url, t.json()["token"])


def post_spec(client: httpx.Client, body: str | bytes, content_type: str = "application/yaml") -> httpx.Response:
    """POST a task spec as ``argus submit`` does; the response, whatever it is."""
    return client.post("/api/v2/tasks", content=body.encode() if isinstance(body, str) else body,
                       headers={"Content-Type": content_type})


def submit_spec(client: httpx.Client, body: str | bytes) -> str:
    """POST a spec that must be accepted; its task id."""
    r = post_spec(client, body)
    assert r.status_code == 201, r.text
    return r.json()["task_id"]


# Answers that showed the server's own folders to a user: (request, the folder, the body). Issue 23 §5: no
# message, value or hint of a refusal names the data root, the state directory or Argus's install; every
# in-process server of the suite records here and tests/conftest.py fails the test that caused one.
LEAKS: list[tuple[str, str, str]] = []


def _leak_scanner(app, settings: Settings):  # noqa: ANN001, ANN202
    """ASGI middleware: every refusal (4xx) and every submit's warnings, scanned for the server's folders."""
    from argus.api.context import ARGUS_INSTALL

    hidden = {str(settings.root), str(settings.state_dir), ARGUS_INSTALL}

    async def scan(scope, receive, send):  # noqa: ANN001, ANN202
        if scope["type"] != "http":
            return await app(scope, receive, send)
        status: list[int] = []
        chunks: list[bytes] = []
        asked: list[bytes] = [unquote_to_bytes(scope.get("query_string", b""))]

        async def receive_and_keep():  # noqa: ANN202
            message = await receive()
            if message["type"] == "http.request":
                asked.append(message.get("body", b""))
            return message

        async def capture(message):  # noqa: ANN001, ANN202
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body") and status:
                    _scan(scope, status[0], b"".join(chunks), b"".join(asked).decode(errors="replace"))
            await send(message)

        return await app(scope, receive_and_keep, capture)

    def _scan(scope, code: int, body: bytes, request: str) -> None:  # noqa: ANN001
        submit = scope["method"] == "POST" and scope["path"].rstrip("/").endswith("/tasks")
        if not (400 <= code < 500 or submit):
            return
        text = body.decode(errors="replace")
        if code < 400:  # an accepted submit: its warnings are messages; its resolved view is the task's real paths
            try:
                text = json.dumps(json.loads(text).get("warnings", []))
            except (ValueError, AttributeError):
                return
        for folder in hidden:
            if folder in text and folder not in request:  # echoing what the user sent shows them nothing new
                LEAKS.append((f"{scope['method']} {scope['path']} → {code}", folder, text[:2000]))

    return scan


@contextmanager
def live_server(settings: Settings, configure=None) -> Iterator[LiveServer]:
    lines: list[str] = []
    ctx = build_context(settings, announce=lines.append)
    if configure:
        configure(ctx)
    token = next(line.split(": ", 1)[1] for line in lines if line.startswith("admin token: "))
    port = free_port()
    app = _leak_scanner(create_app(ctx, extra_routers=tuple(ctx.extras.get("routers", ()))), settings)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                                           **forwarded_headers(settings)))  # as argus.server.serve
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 20, every=0.02, what="server did not start")
    try:
        yield LiveServer(url=f"http://127.0.0.1:{port}", admin_token=token, ctx=ctx)
    finally:
        server.should_exit = True
        thread.join(10)
        ctx.db.dispose()


def terminate(proc: subprocess.Popen, timeout: float) -> None:
    """SIGTERM a child that still runs and wait up to ``timeout`` s (what is left: the caller's tracker kills it)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

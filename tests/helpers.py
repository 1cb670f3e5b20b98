"""Test helpers: a real uvicorn server on a free port backed by a real SQLite file."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn

from argus.api.app import create_app
from argus.api.context import AppContext
from argus.server import build_context
from argus.settings import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    admin_token: str
    ctx: AppContext

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def admin(self) -> httpx.Client:
        return self.client(self.admin_token)

    def new_user(self, name: str) -> httpx.Client:
        return new_user_client(self.url, self.admin_token, name)


def new_user_client(url: str, admin_token: str, name: str) -> httpx.Client:
    """Create user ``name`` with the admin's token on the server at ``url``; a client with a token of theirs."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=30) as a:
        r = a.post("/api/v2/users", json={"name": name})
        assert r.status_code == 201, r.text
        t = a.post(f"/api/v2/users/{name}/tokens", json={})
        assert t.status_code == 201, t.text
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {t.json()['token']}"}, timeout=30)


def post_spec(client: httpx.Client, body: str | bytes, content_type: str = "application/yaml") -> httpx.Response:
    """POST a task spec as ``argus submit`` does; the response, whatever it is."""
    return client.post("/api/v2/tasks", content=body.encode() if isinstance(body, str) else body,
                       headers={"Content-Type": content_type})


def submit_spec(client: httpx.Client, body: str | bytes) -> str:
    """POST a spec that must be accepted; its task id."""
    r = post_spec(client, body)
    assert r.status_code == 201, r.text
    return r.json()["task_id"]


@contextmanager
def live_server(settings: Settings, configure=None) -> Iterator[LiveServer]:
    lines: list[str] = []
    ctx = build_context(settings, announce=lines.append)
    if configure:
        configure(ctx)
    token = next(line.split(": ", 1)[1] for line in lines if line.startswith("admin token: "))
    port = free_port()
    app = create_app(ctx, extra_routers=tuple(ctx.extras.get("routers", ())))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
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
